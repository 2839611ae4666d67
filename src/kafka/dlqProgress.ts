/**
 * What `dlq replay` has handled in one DLQ partition, kept where the backlog gauges already look: the committed
 * offset of the tenant's replay group (`poimen-relay-dlq.<tenant>`) and its offset-commit metadata. A filtered replay passes records over; those must
 * stay counted as not yet replayed (SQS redrive leaves what it does not move in the DLQ), so the committed
 * offset stops at the first record not yet handled, and the records handled after it are listed in the
 * metadata (runs of offsets). A later replay skips them instead of re-publishing them.
 *
 * Metadata format `v1:<gap>.<len>,<gap>.<len>…`, numbers in base 36: each run of handled offsets starts `gap`
 * after the end of the previous run (the first after the committed offset) and is `len` long. Anything else
 * (an older relay, a reset with kafka-consumer-groups) reads as "nothing handled past the offset".
 *
 * A partition the tenant's group has no commit for takes its progress from the group all tenants once shared
 * (`poimen-relay-dlq`), read only: the first replay or discard that handles a record there commits it to the
 * tenant's group, which is read from then on.
 */
import { SHARED_DLQ_REPLAY_GROUP, dlqReplayGroup, tenantFromDlqTopic } from '../contract';
import { committedOffsets } from './offsets';
import type { KafkaAdmin } from './port';

const PREFIX = 'v1:';
/** Kafka refuses a commit whose metadata exceeds offset.metadata.max.bytes (default 4096); stay clear of it. */
export const MAX_PROGRESS_METADATA_CHARS = 4000;

export class PartitionProgress {
  private constructor(
    /** Every offset below is handled; the offset itself is not (or it is the end). */
    private pos: bigint,
    /** Handled offsets past `pos`: sorted, disjoint, non-adjacent half-open runs [start, end), start > pos. */
    private runs: [bigint, bigint][],
  ) {}

  /** From a committed offset ('-1' or undefined: nothing committed) and its metadata; `low` is the log start. */
  static fromCommit(offset: string | undefined, metadata: string | null | undefined, low: bigint) {
    const committed =
      offset !== undefined && offset !== '' && BigInt(offset) >= 0n ? BigInt(offset) : undefined;
    if (committed === undefined) return new PartitionProgress(low, []);
    const progress = new PartitionProgress(committed, decodeRuns(committed, metadata) ?? []);
    // Records below the log start are gone: nothing there is pending any more.
    if (low > progress.pos) progress.advanceTo(low);
    return progress;
  }

  get position(): bigint {
    return this.pos;
  }

  isHandled(offset: bigint): boolean {
    if (offset < this.pos) return true;
    return this.runs.some(([s, e]) => offset >= s && offset < e);
  }

  /** Whether marking `offset` keeps the metadata within what Kafka stores with a commit. */
  canMark(offset: bigint): boolean {
    const next = new PartitionProgress(this.pos, this.runs);
    next.mark(offset);
    return next.metadata().length <= MAX_PROGRESS_METADATA_CHARS;
  }

  mark(offset: bigint): void {
    if (this.isHandled(offset)) return;
    this.runs = insert(this.runs, offset);
    this.normalize();
  }

  /** Offsets in [low, high) not handled. */
  pending(low: bigint, high: bigint): bigint {
    const from = low > this.pos ? low : this.pos;
    if (high <= from) return 0n;
    let n = high - from;
    for (const [s, e] of this.runs) {
      const a = s > from ? s : from;
      const b = e < high ? e : high;
      if (b > a) n -= b - a;
    }
    return n;
  }

  /** The first offset in [low, high) not handled, if any. */
  firstPending(low: bigint, high: bigint): bigint | undefined {
    let x = low > this.pos ? low : this.pos;
    for (const [s, e] of this.runs) {
      if (x < s) break;
      if (x < e) x = e;
    }
    return x < high ? x : undefined;
  }

  metadata(): string {
    let prev = this.pos;
    const parts = this.runs.map(([s, e]) => {
      const part = `${(s - prev).toString(36)}.${(e - s).toString(36)}`;
      prev = e;
      return part;
    });
    return PREFIX + parts.join(',');
  }

  private advanceTo(offset: bigint): void {
    this.pos = offset;
    this.normalize();
  }

  /** Keeps the invariants: runs start past pos; a run reaching pos is folded into it. */
  private normalize(): void {
    const runs: [bigint, bigint][] = [];
    for (const [s, e] of this.runs) {
      if (e <= this.pos) continue;
      if (s <= this.pos) this.pos = e;
      else runs.push([s, e]);
    }
    this.runs = runs;
  }
}

function insert(runs: [bigint, bigint][], offset: bigint): [bigint, bigint][] {
  const out: [bigint, bigint][] = [];
  let cur: [bigint, bigint] = [offset, offset + 1n];
  let placed = false;
  for (const [s, e] of runs) {
    if (e < cur[0]) out.push([s, e]);
    else if (s > cur[1]) {
      if (!placed) {
        out.push(cur);
        placed = true;
      }
      out.push([s, e]);
    } else cur = [s < cur[0] ? s : cur[0], e > cur[1] ? e : cur[1]];
  }
  if (!placed) out.push(cur);
  return out;
}

function decodeRuns(pos: bigint, metadata: string | null | undefined): [bigint, bigint][] | undefined {
  if (!metadata || !metadata.startsWith(PREFIX)) return undefined;
  const body = metadata.slice(PREFIX.length);
  if (body === '') return [];
  const runs: [bigint, bigint][] = [];
  let prev = pos;
  for (const part of body.split(',')) {
    const m = /^([0-9a-z]+)\.([0-9a-z]+)$/.exec(part);
    if (!m) return undefined;
    const gap = parseBase36(m[1]!);
    const len = parseBase36(m[2]!);
    if (gap < 1n || len < 1n) return undefined;
    const start = prev + gap;
    runs.push([start, start + len]);
    prev = start + len;
  }
  return runs;
}

function parseBase36(s: string): bigint {
  let n = 0n;
  for (const c of s) n = n * 36n + BigInt(parseInt(c, 36));
  return n;
}

/** The tenant's replay group's progress per partition of its DLQ topic. */
export async function loadProgress(
  admin: KafkaAdmin,
  dlqTopic: string,
  marks: Map<number, { low: bigint; high: bigint }>,
): Promise<Map<number, PartitionProgress>> {
  const tenant = tenantFromDlqTopic(dlqTopic);
  if (tenant === undefined) throw new Error(`${dlqTopic} is not a DLQ topic (poimen.<tenant>.dispatch.dlq)`);
  const own = await committedOffsets(admin, dlqReplayGroup(tenant), dlqTopic);
  const hasCommit = (c: { offset: string } | undefined) =>
    c !== undefined && c.offset !== '' && BigInt(c.offset) >= 0n;
  const shared = [...marks.keys()].every((p) => hasCommit(own.get(p)))
    ? new Map<number, { offset: string; metadata: string | null }>()
    : await committedOffsets(admin, SHARED_DLQ_REPLAY_GROUP, dlqTopic);
  return new Map(
    [...marks].map(([partition, { low }]) => {
      const c = hasCommit(own.get(partition)) ? own.get(partition) : shared.get(partition);
      return [partition, PartitionProgress.fromCommit(c?.offset, c?.metadata, low)];
    }),
  );
}
