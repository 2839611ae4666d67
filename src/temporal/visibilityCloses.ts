/**
 * Closes learned in bulk from visibility: one ListWorkflowExecutions call per interval answers, for the executions
 * watched here, which have closed (`WorkflowId IN (…) AND ExecutionStatus IN (<the closed statuses>)`). The
 * ingester's admission uses it for a tenant alone on the ingester (ingest/admission.ts), where a long poll per
 * dispatch (./watchClose.ts) cost ~1 ms of ingester and ~1 ms of Temporal CPU per dispatch.
 *
 * A close is seen up to one interval plus the visibility store's lag after it happened: fine for a bound nobody
 * else waits on, not for fair shares. Whatever this cannot answer promptly goes to the per-execution watch, so no
 * slot waits on visibility for long:
 * - an execution not seen closed within HAND_OVER_MS (a long dispatch, one gone past retention, a lagging store);
 * - every pending execution when a call fails, and every new one for a while after (a failing or throttled
 *   visibility: its rate limit per namespace is shared with the Web UI), or for REFUSED_MS after the query was
 *   refused (standard visibility without IN, credentials without List), with one warning each time;
 * - everything while the visibility store is not one known to answer the query from an index (./visibilityStore.ts);
 * - every pending execution when admission asks (`sharpen`: the tenant is no longer alone); an unquotable id.
 * One call per interval however many are watched: more than IDS_PER_QUERY are asked about in turns.
 */
import type { Counter } from 'prom-client';
import { type Logger, logsRepeat } from '../logger';
import { GRPC, grpcStatus } from './grpcStatus';
import { type ClosedPage, IDS_PER_QUERY, answered, closedQuery } from './closedRuns';
import type { StoreVerdict } from './visibilityStore';

/** Waits for one execution to close; resolves false when it was gone (past retention). See ./watchClose.ts. */
export type WatchOne = (workflowId: string, runId: string, signal: AbortSignal) => Promise<boolean>;

export interface VisibilityClosesOptions {
  /** ListWorkflowExecutions on the namespace, closed executions only (listClosed). */
  list: (query: string, nextPageToken: Uint8Array | undefined) => Promise<ClosedPage>;
  /**
   * Whether the visibility store answers the query from an index (./visibilityStore.ts): asked before the first
   * call and every REFUSED_MS after; not indexed sends every watch to the long poll until it is asked again.
   */
  store?: () => Promise<StoreVerdict>;
  /** The per-execution watch, for whatever visibility does not answer. */
  watchOne: WatchOne;
  /** Each watch, by what answered it: `visibility`, or `long_poll` (handed over, or bypassing visibility). */
  seen?: Counter<'via'>;
  logger?: Logger;
  /** Tests shorten these and pass their own clock (ms, monotonic). */
  intervalMs?: number;
  handOverMs?: number;
  /** Longest one call (a List page, the store question) may take locally: closedRuns.ts's `answered`. */
  callLimitMs?: number;
  now?: () => number;
}

/** Between two List calls: at most two a second per ingester, one at a time. */
const INTERVAL_MS = 500;
const HAND_OVER_MS = 10_000;
/** After a failed call, new watches go to the long poll for this long, doubling per failure up to the max. */
const FAILED_MIN_MS = 1000;
const FAILED_MAX_MS = 60_000;
/** After a refusal, the query is tried again this much later (the server's or the role's setup may change). */
const REFUSED_MS = 10 * 60_000;
const REFUSED = new Set<number>([GRPC.INVALID_ARGUMENT, GRPC.PERMISSION_DENIED, GRPC.UNIMPLEMENTED]);
/** What a quoted id may hold: the contract's workflow ids (`dispatch:<tenant>:<dispatch_key>`) always do. */
const QUOTABLE = /^[A-Za-z0-9._:@/-]+$/;

interface Watch {
  workflowId: string;
  runId: string;
  signal: AbortSignal;
  since: number;
  settle: (result: () => Promise<boolean>) => void;
}

export class VisibilityCloses {
  /** Per workflow id, the watches of its runs. */
  private readonly pending = new Map<string, Watch[]>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  /** Where the next call's ids start, when more are watched than one query takes. */
  private cursor = 0;
  private failures = 0;
  /** Calls not yet settled, a call given up at the local limit included. */
  private callsOut = 0;
  private closed = false;
  /** Until then every watch goes to the long poll (after a failure, a refusal, a store that scans). */
  private bypassUntil = Number.NEGATIVE_INFINITY;
  /** Until then the store's last verdict (`store`) stands. */
  private storeKnownUntil = Number.NEGATIVE_INFINITY;
  private scanLogged = false;
  private readonly intervalMs: number;
  private readonly handOverMs: number;
  private readonly now: () => number;

  constructor(private readonly o: VisibilityClosesOptions) {
    this.intervalMs = o.intervalMs ?? INTERVAL_MS;
    this.handOverMs = o.handOverMs ?? HAND_OVER_MS;
    this.now = o.now ?? (() => performance.now());
  }

  /** Same answer as the per-execution watch: true when seen closed, false when gone, rejects when aborted. */
  watch(workflowId: string, runId: string, signal: AbortSignal): Promise<boolean> {
    if (this.closed || this.now() < this.bypassUntil || !QUOTABLE.test(workflowId)) {
      this.o.seen?.inc({ via: 'long_poll' });
      return this.longPoll(workflowId, runId, signal);
    }
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<boolean>((resolve, reject) => {
      const onAbort = () => {
        this.remove(w);
        reject(signal.reason);
      };
      const w: Watch = {
        workflowId,
        runId,
        signal,
        since: this.now(),
        settle: (result) => {
          signal.removeEventListener('abort', onAbort);
          result().then(resolve, reject);
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const runs = this.pending.get(workflowId);
      if (runs) runs.push(w);
      else this.pending.set(workflowId, [w]);
      this.schedule();
    });
  }

  /** Every pending watch to the long poll now: admission needs these closes promptly (another tenant arrived). */
  sharpen(): void {
    this.handOver(() => true);
  }

  /** No more List calls; one in flight ends unheard (its watches are aborted by their owner). */
  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Whether a watch made now would be answered by visibility (late), not handed to the long poll at once. */
  seesLate(): boolean {
    return !this.closed && this.now() >= this.bypassUntil;
  }

  /** Watches waiting for an answer from visibility. */
  get size(): number {
    let n = 0;
    for (const runs of this.pending.values()) n += runs.length;
    return n;
  }

  private schedule(): void {
    if (this.timer || this.polling || this.closed || this.pending.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.poll().catch((err: unknown) =>
        this.o.logger?.error({ err }, 'closes from visibility: poll failed'),
      );
    }, this.intervalMs).unref();
  }

  private async poll(): Promise<void> {
    this.polling = true;
    try {
      const ids = [...this.pending.keys()];
      if (this.cursor >= ids.length) this.cursor = 0;
      const asked = ids.slice(this.cursor, this.cursor + IDS_PER_QUERY);
      this.cursor += IDS_PER_QUERY;
      if (asked.length === 0) return;
      if (this.callsOut > 0) throw new Error('a visibility call given up at its limit is still running');
      if (!(await this.storeIndexed())) return;
      await this.ask(asked);
      this.failures = 0;
      const cutoff = this.now() - this.handOverMs;
      this.handOver((w) => w.since <= cutoff);
    } catch (err) {
      if (!this.closed) this.failed(err);
    } finally {
      this.polling = false;
      this.schedule();
    }
  }

  /**
   * One call, failed once it has taken the local limit (closedRuns.ts's `answered`). A call given up may still be
   * running in the SDK: until it settles, the next poll fails at once rather than start another beside it.
   */
  private call<T>(call: Promise<T>): Promise<T> {
    this.callsOut++;
    const settled = () => void this.callsOut--;
    call.then(settled, settled);
    return answered(call, this.o.callLimitMs);
  }

  /** Whether the store answers from an index, as last asked; any other store hands every watch over. */
  private async storeIndexed(): Promise<boolean> {
    if (!this.o.store || this.now() < this.storeKnownUntil) return true;
    const { indexed, store, final } = await this.call(this.o.store());
    if (this.closed) return false;
    this.storeKnownUntil = final ? Number.POSITIVE_INFINITY : this.now() + REFUSED_MS;
    if (indexed) return true;
    // No List call follows to end a failure streak: the store's answer ends it.
    this.failures = 0;
    this.bypassUntil = this.storeKnownUntil;
    if (!this.scanLogged) {
      this.scanLogged = true;
      this.o.logger?.info(
        { store },
        "the visibility store is not one known to list closed dispatches from an index (a scan costs more as retention grows); a lone tenant's dispatches are watched with their own long polls",
      );
    }
    this.handOver(() => true);
    return false;
  }

  /** One query for these workflow ids, every page of it: each run seen closed resolves its own watch. */
  private async ask(ids: string[]): Promise<void> {
    const query = closedQuery(ids);
    let token: Uint8Array | undefined;
    do {
      const page = await this.call(this.o.list(query, token));
      for (const { workflowId, runId } of page.executions) {
        for (const w of this.pending.get(workflowId) ?? []) {
          if (w.runId !== runId) continue;
          this.remove(w);
          this.o.seen?.inc({ via: 'visibility' });
          w.settle(() => Promise.resolve(true));
        }
      }
      token = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (token);
  }

  /** A failed call: everything pending to the long poll, and new watches too for a while. */
  private failed(err: unknown): void {
    const code = grpcStatus(err)?.code;
    const refused = code !== undefined && REFUSED.has(code);
    if (refused) {
      this.bypassUntil = this.now() + REFUSED_MS;
      this.o.logger?.warn(
        { err },
        'visibility refused the list of closed dispatches; each dispatch is watched with its own long poll, asking visibility again in 10 minutes',
      );
    } else {
      this.failures++;
      this.bypassUntil = this.now() + Math.min(FAILED_MAX_MS, FAILED_MIN_MS * 2 ** (this.failures - 1));
      if (logsRepeat(this.failures)) {
        this.o.logger?.warn(
          { err, failures: this.failures, handedOver: this.size },
          'cannot list closed dispatches from visibility; watching each with its own long poll for a while',
        );
      }
    }
    this.handOver(() => true);
  }

  private handOver(which: (w: Watch) => boolean): void {
    for (const runs of [...this.pending.values()]) {
      for (const w of runs) {
        if (!which(w)) continue;
        this.remove(w);
        this.o.seen?.inc({ via: 'long_poll' });
        w.settle(() => this.longPoll(w.workflowId, w.runId, w.signal));
      }
    }
  }

  /** The per-execution watch; a synchronous throw becomes a rejection, never a lost watch. */
  private longPoll(workflowId: string, runId: string, signal: AbortSignal): Promise<boolean> {
    return Promise.resolve().then(() => this.o.watchOne(workflowId, runId, signal));
  }

  private remove(w: Watch): void {
    const runs = this.pending.get(w.workflowId);
    if (!runs) return;
    const rest = runs.filter((x) => x !== w);
    if (rest.length > 0) this.pending.set(w.workflowId, rest);
    else this.pending.delete(w.workflowId);
  }
}
