/**
 * DLQ tools (contract §6, §8): list dead letters without consuming them, replay the original dispatches to
 * `.dispatch`, and discard the ones an operator has dealt with. Replay cannot make a duplicate run: the
 * dispatch keeps its `dispatch_key`, so Temporal refuses a second run of a completed dispatch and starts a
 * failed one anew, and the API dedups by key as well.
 *
 * Progress lives in the tenant's consumer group `poimen-relay-dlq.<tenant>`, like SQS redrive: a record leaves the backlog only
 * when it is replayed (or discarded). Records a replay passes over (filters, not replayable) stay counted in
 * `dlq_consumer_lag` and the oldest-age gauge, so the committed offset stops at the first of them and the
 * records handled after it are kept in the commit's metadata (kafka/dlqProgress.ts); a later replay skips those.
 * An interrupted replay resumes where it stopped; `--from-beginning` re-reads (and re-publishes) every retained
 * record. One replay or discard at a time per tenant: a second refuses at once (./dlqExclusive.ts).
 *
 * Test dead letters (`dlq send-test`) are never replayed: a replay passes them over like a filtered record, so
 * they stay in the backlog (the gauges show what the operator sent) until `dlq purge-tests` discards exactly them.
 */
import crypto from 'node:crypto';
import { DLQ_TYPES, type DlqType, dlqReplayGroup, topics } from '../contract';
import { ConfigError } from '../errors';
import { whenCoordinatorReady } from '../kafka/coordinator';
import { deadLetterOf } from '../kafka/dlqReader';
import type { KafkaAdmin, KafkaClient } from '../kafka/port';
import { type PartitionRange, type RangeCommit, readRange } from '../kafka/readRange';
import { type DlqEntry, dlqWatermarks } from './dlqList';
import { exclusiveDlqRead, refuseIfBusy } from './dlqExclusive';
import { loadProgress } from '../kafka/dlqProgress';
import { type RedrivePolicy, decide, republishedMessage } from './dlqVerdict';

export { dlqBacklog } from '../kafka/dlqBacklog';
export { type DlqEntry, listDlq } from './dlqList';

export interface ReplayOptions {
  tenant: string;
  ids?: string[];
  type?: DlqType;
  sinceMs?: number;
  dryRun?: boolean;
  force?: boolean;
  ratePerSec?: number;
  fromBeginning?: boolean;
  /**
   * Mark the matching records handled without re-publishing them (`dlq discard`); `all` matches every record,
   * `tests` only test dead letters (`dlq purge-tests`), whatever else the options say.
   */
  discard?: { all: boolean; tests?: boolean };
  /**
   * `dlq redrive`: only dispatch failures that ran out of retries, old enough and with redrives left, re-published
   * with their redrive count raised by one (./dlqVerdict.ts); the rest stays pending.
   */
  redrive?: RedrivePolicy;
  onStart?: (total: number) => void;
  /** Each record's outcome as it is known; `error` with `failed` (the send that stopped the replay). */
  onRecord?: (outcome: ReplayOutcome, entry: DlqEntry, error?: unknown) => void;
}

export type ReplayOutcome =
  | 'replayed'
  | 'would_replay'
  | 'discarded'
  | 'would_discard'
  | 'filtered'
  | 'not_replayable'
  | 'unreadable'
  | 'test'
  | 'deferred'
  /** A redrive's: not old enough yet (a later redrive takes it). */
  | 'not_due'
  /** A redrive's: its dispatch was redriven as often as the policy allows; it stays pending. */
  | 'redrives_spent'
  /** Handled by an earlier replay or discard: skipped (not counted in onStart's total). */
  | 'already_handled'
  /** The send failed for good: the replay stops with this error. */
  | 'failed';

export interface ReplaySummary {
  /** Records read that were not handled before. */
  examined: number;
  replayed: number;
  wouldReplay: number;
  discarded: number;
  filtered: number;
  notReplayable: number;
  unreadable: number;
  /**
   * Of the records examined, the test dead letters (`dlq send-test`). A replay passes every one over, whatever its
   * filters or --force, and leaves it in the backlog; `dlq purge-tests` discards exactly these (its `discarded`),
   * the other records counting as `filtered`.
   */
  tests: number;
  /** Handled by an earlier replay or discard (past a record still pending): skipped, not re-published. */
  alreadyHandled: number;
  /** Left for a later run: what this partition's progress can record is full (docs/operations.md). */
  deferred: number;
  /** A redrive's: records left pending for a later redrive (not old enough) or for good (redrives spent). */
  notDue?: number;
  redrivesSpent?: number;
  /** With dryRun: the records that would be replayed or discarded. */
  records?: {
    id: string | null;
    type: DlqType | null;
    dispatch_key: string | null;
    partition: number;
    offset: string;
    test: boolean;
  }[];
}

const SKIPPED_COUNTER = {
  filtered: 'filtered',
  not_replayable: 'notReplayable',
  unreadable: 'unreadable',
  not_due: 'notDue',
  redrives_spent: 'redrivesSpent',
} as const;

const REPLAY_PRODUCER = { idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false } as const;
export function parseDlqType(value: string): DlqType {
  if (!(DLQ_TYPES as readonly string[]).includes(value)) {
    throw new ConfigError('--type', `= ${JSON.stringify(value)}: must be one of ${DLQ_TYPES.join(', ')}`);
  }
  return value as DlqType;
}

export async function replayDlq(
  kafka: KafkaClient,
  admin: KafkaAdmin,
  opts: ReplayOptions,
): Promise<ReplaySummary> {
  if (opts.force && opts.type === undefined) {
    throw new ConfigError(
      '--force',
      'needs --type (e.g. --type malformed_dispatch --force): forcing every type is never what you want',
    );
  }
  const dlqTopic = topics.dlq(opts.tenant);
  const marks = await dlqWatermarks(admin, dlqTopic);
  // A dry run records nothing, so it may read while another command works; the others go one at a time.
  if (!opts.dryRun) await refuseIfBusy(admin, opts.tenant);
  // A command's first group request on a broker no group has used waits while the coordinator loads; the
  // ingester's gauges read the same progress and simply try again at their next round.
  const progress = await whenCoordinatorReady(() => loadProgress(admin, dlqTopic, marks));
  const ranges: PartitionRange[] = [...marks].map(([partition, { low, high }]) => ({
    partition,
    start: opts.fromBeginning ? low : progress.get(partition)!.position,
    end: high,
  }));
  opts.onStart?.(
    ranges.reduce(
      (n, r) =>
        n + Number(opts.fromBeginning ? r.end - r.start : progress.get(r.partition)!.pending(r.start, r.end)),
      0,
    ),
  );

  const summary: ReplaySummary = {
    examined: 0,
    replayed: 0,
    wouldReplay: 0,
    discarded: 0,
    filtered: 0,
    notReplayable: 0,
    unreadable: 0,
    tests: 0,
    alreadyHandled: 0,
    deferred: 0,
    ...(opts.redrive ? { notDue: 0, redrivesSpent: 0 } : {}),
    ...(opts.dryRun ? { records: [] } : {}),
  };
  const publishes = !opts.dryRun && !opts.discard;
  // Idempotent here, unlike the DLQ publisher (kafka/dlqPublisher.ts): kafkajs takes a partition's sequence number
  // back after a failed produce, which goes wrong only when another record then reuses it. Replay sends one record
  // at a time and stops at a send that fails for good (`broken`: kafkajs may still hand over records of other
  // partitions fetched with the failed one), so the only reuse is kafkajs's retry of that same record, which the
  // broker recognises (a lost answer then writes nothing twice).
  let broken: unknown;
  const producer = kafka.producer(REPLAY_PRODUCER);
  // A throwing onRecord (a report line not written) stops the replay; after a failed send, the send's error stays.
  const notify = (outcome: ReplayOutcome, entry: DlqEntry, error?: unknown): void => {
    try {
      opts.onRecord?.(outcome, entry, error);
    } catch (err) {
      broken ??= err;
      if (outcome !== 'failed') throw err;
    }
  };
  if (publishes) await producer.connect();
  const minGapMs = opts.ratePerSec ? 1000 / opts.ratePerSec : 0;
  let lastSend = 0;
  try {
    await readRange(kafka, admin, {
      topic: dlqTopic,
      // A dry run must not move the replay position: it reads through a throwaway group.
      groupId: opts.dryRun ? `poimen-relay-dlq-dry-run-${crypto.randomUUID()}` : dlqReplayGroup(opts.tenant),
      ranges,
      commit: !opts.dryRun,
      ...(opts.dryRun ? {} : { exclusive: exclusiveDlqRead(admin, opts.tenant, dlqTopic, marks, progress) }),
      onMessage: async (partition, message): Promise<RangeCommit | void> => {
        if (broken !== undefined) throw broken; // nothing more after a failed send or report line
        const offset = BigInt(message.offset);
        const p = progress.get(partition)!;
        if (!opts.fromBeginning && p.isHandled(offset)) {
          summary.alreadyHandled++;
          if (opts.onRecord) {
            const { key: _k, ...handledEntry } = deadLetterOf(partition, message);
            notify('already_handled', handledEntry);
          }
          return;
        }
        summary.examined++;
        const { key: _key, ...entry } = deadLetterOf(partition, message);
        const record = entry.record;
        if (entry.test) summary.tests++;
        const verdict = decide(record, entry.test, opts);
        if (typeof verdict === 'string') {
          if (verdict !== 'test')
            summary[SKIPPED_COUNTER[verdict]] = (summary[SKIPPED_COUNTER[verdict]] ?? 0) + 1;
          notify(verdict, entry);
          return;
        }
        if (opts.dryRun) {
          summary[opts.discard ? 'discarded' : 'wouldReplay']++;
          const r = verdict.record;
          summary.records?.push({
            id: r?.id ?? null,
            type: r?.type ?? null,
            dispatch_key: r?.dispatch_key ?? null,
            partition,
            offset: message.offset,
            test: entry.test,
          });
          notify(opts.discard ? 'would_discard' : 'would_replay', entry);
          return;
        }
        // Checked before publishing: a record re-published but not recorded would be re-published next time.
        if (!p.canMark(offset)) {
          summary.deferred++;
          notify('deferred', entry);
          return;
        }
        const handled = (): RangeCommit => {
          p.mark(offset);
          return { offset: p.position, metadata: p.metadata() };
        };
        if (!publishes || !verdict.record) {
          summary.discarded++;
          notify('discarded', entry);
          return handled();
        }
        // A timer may fire a millisecond early (Node measures it from a cached clock): it then waits again, so
        // sends start at least 1/rate s apart and the rate is never exceeded, however long the replay.
        for (let wait = lastSend + minGapMs - Date.now(); wait > 0; wait = lastSend + minGapMs - Date.now())
          await new Promise((r) => setTimeout(r, wait));
        lastSend = Date.now();
        await producer
          .send({
            topic: topics.dispatch(opts.tenant),
            acks: -1,
            messages: [republishedMessage(opts.tenant, verdict.record, opts.redrive)],
          })
          .catch((err: unknown) => {
            broken = err;
            notify('failed', entry, err);
            throw err;
          });
        summary.replayed++;
        notify('replayed', entry);
        return handled();
      },
    });
  } finally {
    if (publishes) await producer.disconnect();
  }
  return summary;
}
