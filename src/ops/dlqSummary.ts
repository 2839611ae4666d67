/**
 * `dlq summary` (docs/cli.md): what failed, at a glance. Dead letters grouped by tenant, type, error class
 * (../contract/dlqErrorClass.ts), HTTP status and workflow_ref, with a count, the first and last time and one
 * example id per group; never a payload. Read like `dlq list`: through a throwaway group that commits nothing
 * (../kafka/dlqReader.ts), so the replay groups, their progress and the backlog gauges stay as they were, and a
 * replay or discard may run meanwhile. Without a tenant it reads every tenant's DLQ topic; one deleted between the
 * listing and its read is left out and named in `vanished`.
 */
import { type DlqRecord, dlqErrorClass, tenantFromDlqTopic, topics } from '../contract';
import { type DeadLetter, scanDeadLetters } from '../kafka/dlqReader';
import type { KafkaAdmin, KafkaClient } from '../kafka/port';
import { dlqWatermarks } from './dlqList';

/** A group's type: a §6 type, `test` for test dead letters (`dlq send-test`), `unreadable` for a non-DLQ record. */
export type SummaryType = DlqRecord['type'] | 'test' | 'unreadable';

export interface SummaryGroup {
  tenant: string;
  type: SummaryType;
  /** null for an unreadable record. */
  error_class: string | null;
  http_status: number | null;
  /** The dispatch's workflow_ref, read from the payload; null when the payload has none (or is not JSON). */
  workflow_ref: string | null;
  count: number;
  /** ISO-8601: when the group's first and last dead letters were written. */
  first: string;
  last: string;
  /** The id of one dead letter of the group (the newest); null for unreadable records. */
  example_id: string | null;
}

export interface DlqSummary {
  /** The --since bound (ISO-8601), or null. */
  since: string | null;
  /** The tenants whose DLQ topics were read, sorted. */
  tenants: string[];
  /**
   * Without --tenant: the tenants whose DLQ topic was listed but deleted before it was read through, sorted; they
   * are left out of `tenants` and the groups. (A --tenant whose topic is missing is "not found".)
   */
  vanished: string[];
  /** Dead letters counted (the sum of the counts). */
  total: number;
  /** Largest count first; ties by tenant, type, error class. */
  groups: SummaryGroup[];
}

/** The workflow_ref of a dead letter's dispatch, when its payload is a JSON object with a string one. */
export function workflowRefOf(record: DlqRecord): string | null {
  if (record.payload === null) return null;
  try {
    const json: unknown = JSON.parse(record.payload);
    if (typeof json !== 'object' || json === null || Array.isArray(json)) return null;
    const ref = (json as Record<string, unknown>)['workflow_ref'];
    return typeof ref === 'string' ? ref : null;
  } catch {
    return null;
  }
}

/** Groups dead letters as they come; `result()` gives the groups in the summary's order. Pure: no I/O. */
export class DlqGrouper {
  private readonly groups = new Map<string, SummaryGroup & { firstMs: number; lastMs: number }>();

  constructor(private readonly sinceMs?: number) {}

  /** `kafkaTimestampMs` dates a record that is not a DLQ record (it has no `timestamp` of its own). */
  add(tenant: string, letter: Pick<DeadLetter, 'record' | 'test'>, kafkaTimestampMs: number): void {
    const r = letter.record;
    const parsed = r ? Date.parse(r.timestamp) : NaN;
    const atMs = Number.isNaN(parsed) ? kafkaTimestampMs : parsed;
    if (this.sinceMs !== undefined && atMs < this.sinceMs) return;
    const fields = {
      tenant,
      type: (!r ? 'unreadable' : letter.test ? 'test' : r.type) as SummaryType,
      error_class: r ? dlqErrorClass(r.error) : null,
      http_status: r?.http_status ?? null,
      workflow_ref: r ? workflowRefOf(r) : null,
    };
    const key = JSON.stringify(Object.values(fields));
    const g = this.groups.get(key);
    if (!g) {
      this.groups.set(key, {
        ...fields,
        count: 1,
        first: '',
        last: '',
        firstMs: atMs,
        lastMs: atMs,
        example_id: r?.id ?? null,
      });
      return;
    }
    g.count++;
    if (atMs < g.firstMs) g.firstMs = atMs;
    if (atMs >= g.lastMs) {
      g.lastMs = atMs;
      g.example_id = r?.id ?? g.example_id;
    }
  }

  /** Forgets what was added for `tenant` (its topic could not be read through). */
  drop(tenant: string): void {
    for (const [key, g] of this.groups) if (g.tenant === tenant) this.groups.delete(key);
  }

  result(): SummaryGroup[] {
    const text = (v: string | null) => v ?? '';
    return [...this.groups.values()]
      .map(({ firstMs, lastMs, ...g }) => ({
        ...g,
        first: new Date(firstMs).toISOString(),
        last: new Date(lastMs).toISOString(),
      }))
      .sort(
        (a, b) =>
          b.count - a.count ||
          a.tenant.localeCompare(b.tenant) ||
          a.type.localeCompare(b.type) ||
          text(a.error_class).localeCompare(text(b.error_class)) ||
          (a.http_status ?? 0) - (b.http_status ?? 0) ||
          text(a.workflow_ref).localeCompare(text(b.workflow_ref)),
      );
  }
}

/** Reads the DLQ topics of `tenant` (or of every tenant) to their current end and groups what is there. */
export async function summarizeDlq(
  kafka: KafkaClient,
  admin: KafkaAdmin,
  opts: { tenant?: string; sinceMs?: number },
): Promise<DlqSummary> {
  const tenants =
    opts.tenant !== undefined
      ? [opts.tenant]
      : (await admin.listTopics())
          .map((t) => tenantFromDlqTopic(t))
          .filter((t): t is string => t !== undefined)
          .sort();
  const grouper = new DlqGrouper(opts.sinceMs);
  const read: string[] = [];
  const vanished: string[] = [];
  for (const tenant of tenants) {
    const topic = topics.dlq(tenant);
    try {
      // A named tenant without a DLQ topic is "not found"; read from each partition's log start to its end now.
      const marks = await dlqWatermarks(admin, topic);
      const ranges = [...marks].map(([partition, { low, high }]) => ({ partition, start: low, end: high }));
      await scanDeadLetters(
        kafka,
        admin,
        topic,
        { ranges, groupPrefix: 'poimen-relay-dlq-summary' },
        (d, ts) => grouper.add(tenant, d, ts),
      );
      read.push(tenant);
    } catch (err) {
      // Listed a moment ago and gone now: deleted meanwhile. The other tenants are still summarised.
      // (Kafka not answering the check either: the read's own error is the one to report.)
      const listed = await admin.listTopics().catch(() => [topic]);
      if (opts.tenant !== undefined || listed.includes(topic)) throw err;
      grouper.drop(tenant);
      vanished.push(tenant);
    }
  }
  const groups = grouper.result();
  return {
    since: opts.sinceMs === undefined ? null : new Date(opts.sinceMs).toISOString(),
    tenants: read,
    vanished,
    total: groups.reduce((n, g) => n + g.count, 0),
    groups,
  };
}
