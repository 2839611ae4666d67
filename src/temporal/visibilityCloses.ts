/**
 * Closes learned in bulk from visibility: one ListWorkflowExecutions call per interval answers, for every execution
 * watched here, which have closed (`WorkflowId IN (…) AND ExecutionStatus != 'Running'`). The ingester's admission
 * uses it for a tenant alone on the ingester (ingest/admission.ts), where a long poll per dispatch
 * (./watchClose.ts) cost more than the slot it frees: ~1 ms of ingester and ~1 ms of Temporal CPU per dispatch.
 *
 * A close is seen up to one interval plus the visibility store's lag after it happened: precise enough for a bound
 * nobody shares, not for fair shares (a slot held late is a slot another tenant waits for). Whatever this cannot
 * answer goes to the per-execution watch instead, so nothing holds a slot for good:
 * - an execution not seen closed within HAND_OVER_MS (a long dispatch, an execution gone past retention, lag);
 * - every execution, from the first refusal of the query on (standard visibility without IN, a role without List):
 *   one line says so, and the process keeps the per-execution watches;
 * - a workflow id the query could not quote (the contract's ids never need quoting).
 * Any other failure (unreachable, throttled: the namespace's visibility rate limit is shared with the Web UI) waits
 * longer before the next call, up to MAX_INTERVAL_MS.
 */
import type { Client } from '@temporalio/client';
import type { Logger } from '../logger';
import { GRPC, grpcStatus } from './grpcStatus';

/** Waits for one execution to close; resolves false when it was gone (past retention). See ./watchClose.ts. */
export type WatchOne = (workflowId: string, runId: string, signal: AbortSignal) => Promise<boolean>;

/** One page of closed executions among those asked about. */
export interface ClosedPage {
  executions: { workflowId: string; runId: string }[];
  nextPageToken?: Uint8Array;
}

export interface VisibilityClosesOptions {
  /** ListWorkflowExecutions on the namespace. */
  list: (query: string, nextPageToken: Uint8Array | undefined) => Promise<ClosedPage>;
  /** The per-execution watch, for whatever visibility does not answer. */
  watchOne: WatchOne;
  logger?: Logger;
  /** Tests shorten these. */
  intervalMs?: number;
  handOverMs?: number;
  /** ms, monotonic. */
  now?: () => number;
}

/** Between two List calls. The ingester's alone-time visibility load: 2 calls a second at most, one at a time. */
export const INTERVAL_MS = 500;
/** After a failed call the interval doubles up to this. */
const MAX_INTERVAL_MS = 8000;
/** An execution not seen closed this long after its watch began goes to the per-execution watch. */
export const HAND_OVER_MS = 10_000;
/** Workflow ids per query: the default POIMEN_INGEST_MAX_OPEN in one call, far below visibility stores' limits. */
export const IDS_PER_QUERY = 256;
/** Codes that mean this query will never be answered here. */
const REFUSED = new Set<number>([GRPC.INVALID_ARGUMENT, GRPC.PERMISSION_DENIED, GRPC.UNIMPLEMENTED]);
/** What a quoted id may hold: the contract's workflow ids (`dispatch:<tenant>:<dispatch_key>`) always do. */
const QUOTABLE = /^[A-Za-z0-9._:@/-]+$/;

interface Watch {
  workflowId: string;
  runId: string;
  signal: AbortSignal;
  since: number;
  done: (result: Promise<boolean>) => void;
  onAbort: () => void;
}

export class VisibilityCloses {
  /** Per workflow id, the watches of its runs. */
  private readonly pending = new Map<string, Watch[]>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private refused = false;
  private failures = 0;
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
    if (this.refused || !QUOTABLE.test(workflowId)) return this.o.watchOne(workflowId, runId, signal);
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<boolean>((resolve, reject) => {
      const w: Watch = {
        workflowId,
        runId,
        signal,
        since: this.now(),
        done: (result) => {
          signal.removeEventListener('abort', w.onAbort);
          result.then(resolve, reject);
        },
        onAbort: () => {
          this.remove(w);
          reject(signal.reason);
        },
      };
      signal.addEventListener('abort', w.onAbort, { once: true });
      const runs = this.pending.get(workflowId);
      if (runs) runs.push(w);
      else this.pending.set(workflowId, [w]);
      this.schedule(this.intervalMs);
    });
  }

  /** Watches waiting for an answer from visibility. */
  get size(): number {
    let n = 0;
    for (const runs of this.pending.values()) n += runs.length;
    return n;
  }

  private schedule(delayMs: number): void {
    if (this.timer || this.polling || this.pending.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.poll();
    }, delayMs).unref();
  }

  private async poll(): Promise<void> {
    this.polling = true;
    let next = this.intervalMs;
    try {
      const ids = [...this.pending.keys()];
      for (let i = 0; i < ids.length && !this.refused; i += IDS_PER_QUERY) {
        await this.ask(ids.slice(i, i + IDS_PER_QUERY));
      }
      this.failures = 0;
      this.handOverLate();
    } catch (err) {
      const code = grpcStatus(err)?.code;
      if (code !== undefined && REFUSED.has(code)) this.refuse(err);
      else {
        this.failures++;
        next = Math.min(MAX_INTERVAL_MS, this.intervalMs * 2 ** this.failures);
        if (this.failures === 1 || this.failures % 100 === 0) {
          this.o.logger?.warn(
            { err, failures: this.failures, waiting: this.size },
            'cannot list closed dispatches from visibility; asking again later',
          );
        }
        this.handOverLate();
      }
    } finally {
      this.polling = false;
      this.schedule(next);
    }
  }

  /** One query for these workflow ids, every page of it: each run seen closed resolves its watch. */
  private async ask(ids: string[]): Promise<void> {
    const query = `WorkflowId IN (${ids.map((id) => `'${id}'`).join(', ')}) AND ExecutionStatus != 'Running'`;
    let token: Uint8Array | undefined;
    do {
      const page = await this.o.list(query, token);
      for (const { workflowId, runId } of page.executions) {
        for (const w of this.pending.get(workflowId) ?? []) {
          if (w.runId !== runId) continue;
          this.remove(w);
          w.done(Promise.resolve(true));
        }
      }
      token = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (token);
  }

  /** Watches visibility has not answered for long enough go to the per-execution watch. */
  private handOverLate(): void {
    const cutoff = this.now() - this.handOverMs;
    for (const runs of [...this.pending.values()]) {
      for (const w of runs) if (w.since <= cutoff) this.handOver(w);
    }
  }

  private refuse(err: unknown): void {
    this.refused = true;
    this.o.logger?.warn(
      { err },
      'visibility refused the list of closed dispatches; admission watches each dispatch with its own long poll from now on',
    );
    for (const runs of [...this.pending.values()]) for (const w of runs) this.handOver(w);
  }

  private handOver(w: Watch): void {
    this.remove(w);
    w.done(this.o.watchOne(w.workflowId, w.runId, w.signal));
  }

  private remove(w: Watch): void {
    const runs = this.pending.get(w.workflowId);
    if (!runs) return;
    const rest = runs.filter((x) => x !== w);
    if (rest.length > 0) this.pending.set(w.workflowId, rest);
    else this.pending.delete(w.workflowId);
  }
}

/** Longest a List call may take before it counts as failed (a stalled call would stop every later one). */
const LIST_DEADLINE_MS = 10_000;

/** One page of ListWorkflowExecutions through the client's connection. */
export async function listClosed(
  client: Client,
  query: string,
  nextPageToken?: Uint8Array,
): Promise<ClosedPage> {
  const res = await client.connection.withDeadline(Date.now() + LIST_DEADLINE_MS, () =>
    client.workflowService.listWorkflowExecutions({
      namespace: client.options.namespace,
      query,
      pageSize: IDS_PER_QUERY,
      ...(nextPageToken ? { nextPageToken } : {}),
    }),
  );
  return {
    executions: (res.executions ?? []).map((e) => ({
      workflowId: e.execution?.workflowId ?? '',
      runId: e.execution?.runId ?? '',
    })),
    ...(res.nextPageToken?.length ? { nextPageToken: res.nextPageToken } : {}),
  };
}
