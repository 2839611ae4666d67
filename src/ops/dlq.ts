/**
 * DLQ tools (SPEC §6, §8): list dead letters without consuming them, and replay the original dispatches to
 * `.dispatch`. Replay cannot make a duplicate run: the dispatch keeps its `dispatch_key`, so Temporal refuses
 * a second run of a completed dispatch and starts a failed one anew, and the API dedups by key as well.
 *
 * Progress lives in the consumer group `poimen-relay-dlq`: a replay reads from the group's position to the
 * end the DLQ had when it started, committing each record once handled (re-published, or passed over by a
 * filter). An interrupted replay resumes where it stopped; `--from-beginning` re-reads all retained records.
 */
import crypto from 'node:crypto';
import type { Admin, Kafka } from 'kafkajs';
import {
  DLQ_REPLAY_GROUP,
  DLQ_TYPES,
  type DlqRecord,
  type DlqType,
  dispatchRecordKey,
  dlqRecordPayload,
  parseDlqRecord,
  topics,
} from '../contract';
import { ConfigError } from '../errors';
import { type PartitionRange, readRange, watermarks } from '../kafka/readRange';

export interface DlqEntry {
  partition: number;
  offset: string;
  record: DlqRecord | undefined;
  /** The raw value when it is not a DLQ record (written by something else). */
  raw?: string;
}

export async function listDlq(
  kafka: Kafka,
  admin: Admin,
  tenant: string,
  limit: number,
): Promise<DlqEntry[]> {
  const topic = topics.dlq(tenant);
  const marks = await watermarks(admin, topic);
  // At most `limit` per partition, from the newest end; merged and cut to the newest `limit` overall.
  const ranges: PartitionRange[] = [...marks].map(([partition, { low, high }]) => ({
    partition,
    start: high - BigInt(limit) > low ? high - BigInt(limit) : low,
    end: high,
  }));
  const entries: DlqEntry[] = [];
  await readRange(kafka, admin, {
    topic,
    groupId: `poimen-relay-dlq-list-${crypto.randomUUID()}`,
    ranges,
    commit: false,
    onMessage: async (partition, message) => {
      const record = parseDlqRecord(message.value);
      entries.push({
        partition,
        offset: message.offset,
        record,
        ...(record ? {} : { raw: message.value?.toString('utf8') ?? '' }),
      });
    },
  });
  const ts = (e: DlqEntry) => (e.record ? Date.parse(e.record.timestamp) : 0);
  return entries.sort((a, b) => ts(a) - ts(b)).slice(-limit);
}

export interface ReplayOptions {
  tenant: string;
  ids?: string[];
  type?: DlqType;
  sinceMs?: number;
  dryRun?: boolean;
  force?: boolean;
  ratePerSec?: number;
  fromBeginning?: boolean;
  onStart?: (total: number) => void;
  onRecord?: (outcome: ReplayOutcome, entry: DlqEntry) => void;
}

export type ReplayOutcome = 'replayed' | 'would_replay' | 'filtered' | 'not_replayable' | 'unreadable';

export interface ReplaySummary {
  examined: number;
  replayed: number;
  wouldReplay: number;
  filtered: number;
  notReplayable: number;
  unreadable: number;
}

export function parseDlqType(value: string): DlqType {
  if (!(DLQ_TYPES as readonly string[]).includes(value)) {
    throw new ConfigError('--type', `= ${JSON.stringify(value)}: must be one of ${DLQ_TYPES.join(', ')}`);
  }
  return value as DlqType;
}

export async function replayDlq(kafka: Kafka, admin: Admin, opts: ReplayOptions): Promise<ReplaySummary> {
  if (opts.force && opts.type === undefined) {
    throw new ConfigError(
      '--force',
      'needs --type (e.g. --type malformed_dispatch --force): forcing every type is never what you want',
    );
  }
  const dlqTopic = topics.dlq(opts.tenant);
  const marks = await watermarks(admin, dlqTopic);
  const committed = opts.fromBeginning
    ? []
    : await admin.fetchOffsets({ groupId: DLQ_REPLAY_GROUP, topics: [dlqTopic] });
  const position = new Map(committed[0]?.partitions.map((p) => [p.partition, BigInt(p.offset)]) ?? []);
  const ranges: PartitionRange[] = [...marks].map(([partition, { low, high }]) => {
    const pos = position.get(partition);
    return { partition, start: pos !== undefined && pos >= low ? pos : low, end: high };
  });
  opts.onStart?.(ranges.reduce((n, r) => n + Number(r.end - r.start), 0));

  const summary: ReplaySummary = {
    examined: 0,
    replayed: 0,
    wouldReplay: 0,
    filtered: 0,
    notReplayable: 0,
    unreadable: 0,
  };
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
  });
  await producer.connect();
  const minGapMs = opts.ratePerSec ? 1000 / opts.ratePerSec : 0;
  let lastSend = 0;
  try {
    await readRange(kafka, admin, {
      topic: dlqTopic,
      // A dry run must not move the replay position: it reads through a throwaway group.
      groupId: opts.dryRun ? `poimen-relay-dlq-dry-run-${crypto.randomUUID()}` : DLQ_REPLAY_GROUP,
      ranges,
      commit: !opts.dryRun,
      onMessage: async (partition, message) => {
        summary.examined++;
        const record = parseDlqRecord(message.value);
        const entry: DlqEntry = { partition, offset: message.offset, record };
        const verdict = decide(record, opts);
        if (typeof verdict === 'string') {
          summary[verdict === 'not_replayable' ? 'notReplayable' : verdict]++;
          opts.onRecord?.(verdict, entry);
          return;
        }
        if (opts.dryRun) {
          summary.wouldReplay++;
          opts.onRecord?.('would_replay', entry);
          return;
        }
        const wait = lastSend + minGapMs - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        lastSend = Date.now();
        await producer.send({
          topic: topics.dispatch(opts.tenant),
          acks: -1,
          messages: [
            {
              key:
                verdict.record.dispatch_key !== null
                  ? dispatchRecordKey(opts.tenant, verdict.record.dispatch_key)
                  : null,
              value: toBuffer(dlqRecordPayload(verdict.record)),
              headers: { 'poimen-replay-of': verdict.record.id },
            },
          ],
        });
        summary.replayed++;
        opts.onRecord?.('replayed', entry);
      },
    });
  } finally {
    await producer.disconnect();
  }
  return summary;
}

function decide(
  record: DlqRecord | undefined,
  opts: ReplayOptions,
): { record: DlqRecord } | 'filtered' | 'not_replayable' | 'unreadable' {
  if (!record) return 'unreadable';
  if (opts.ids && opts.ids.length > 0 && !opts.ids.includes(record.id)) return 'filtered';
  if (opts.type !== undefined && record.type !== opts.type) return 'filtered';
  if (opts.sinceMs !== undefined && Date.parse(record.timestamp) < opts.sinceMs) return 'filtered';
  // A malformed or mismatched record would only be dead-lettered again: replayed only on explicit request.
  if (record.type !== 'dispatch_failure' && !(opts.force && opts.type === record.type))
    return 'not_replayable';
  // Nothing to re-publish: a tombstone, or a dead letter that had to go without its payload.
  if (record.payload === null && record.payload_base64 === undefined) return 'not_replayable';
  return { record };
}

function toBuffer(bytes: Uint8Array | null | undefined): Buffer | null {
  return bytes ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) : null;
}

/**
 * DLQ backlog per topic for the metrics: records past the replay group's position, and the age of the oldest
 * of them. The age comes from the broker's time index (offsets for a timestamp), so no record is read.
 */
export async function dlqBacklog(
  admin: Admin,
  dlqTopic: string,
  nowMs: number,
): Promise<{ lag: number; oldestAgeSeconds: number }> {
  const marks = await watermarks(admin, dlqTopic);
  const committed = await admin.fetchOffsets({ groupId: DLQ_REPLAY_GROUP, topics: [dlqTopic] });
  const position = new Map(committed[0]?.partitions.map((p) => [p.partition, BigInt(p.offset)]) ?? []);
  let lag = 0n;
  let oldestMs: number | undefined;
  for (const [partition, { low, high }] of marks) {
    const raw = position.get(partition);
    const pos = raw !== undefined && raw >= low ? raw : low;
    if (high <= pos) continue;
    lag += high - pos;
    const ts = await timestampAt(admin, dlqTopic, partition, pos, nowMs);
    if (ts !== undefined && (oldestMs === undefined || ts < oldestMs)) oldestMs = ts;
  }
  return {
    lag: Number(lag),
    oldestAgeSeconds: oldestMs === undefined ? 0 : Math.max(0, (nowMs - oldestMs) / 1000),
  };
}

/** The (second-resolution) timestamp of the record at `offset`: the latest t whose first offset at/after t is <= offset. */
async function timestampAt(
  admin: Admin,
  topic: string,
  partition: number,
  offset: bigint,
  nowMs: number,
): Promise<number | undefined> {
  const firstOffsetAt = async (ts: number) => {
    const res = await admin.fetchTopicOffsetsByTimestamp(topic, ts);
    const p = res.find((x) => x.partition === partition);
    return p && BigInt(p.offset) >= 0n ? BigInt(p.offset) : undefined;
  };
  let lo = 0;
  let hi = Math.floor(nowMs / 1000) + 1;
  if ((await firstOffsetAt(lo * 1000)) === undefined) return undefined;
  // Invariant: firstOffsetAt(lo) <= offset < firstOffsetAt(hi) (or none at hi).
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    const first = await firstOffsetAt(mid * 1000);
    if (first !== undefined && first <= offset) lo = mid;
    else hi = mid;
  }
  return lo * 1000;
}
