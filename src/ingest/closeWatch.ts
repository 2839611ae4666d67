/**
 * How admission learns that one execution closed: which watch a dispatch gets (the precise long poll, or the lone
 * watch that sees closes late but cheaply), asked again with backoff while Temporal cannot say, so that an outage
 * never frees a slot. Owned by admission.ts, which holds a slot until this returns and decides `mayBeLate`.
 */
import { type Logger, logsRepeat } from '../logger';

/**
 * Waits until the execution closes, however it closes; rejects only when that could not be learned. Resolves false
 * when the execution was gone (past retention): closed, but at an unknown time.
 */
export type WatchClose = (workflowId: string, runId: string, signal: AbortSignal) => Promise<boolean | void>;

/** A watch that sees closes late but cheaply (temporal/visibilityCloses.ts), for a tenant alone on the ingester. */
export interface LoneWatch {
  watch(workflowId: string, runId: string, signal: AbortSignal): Promise<boolean>;
  /** Whether a watch made now would be seen late: false while it hands every watch to the precise one. */
  seesLate(): boolean;
  /** Its pending watches to the precise watch now: the tenant is alone no more. */
  sharpen(): void;
  /** No more calls; a call in flight ends unheard. */
  close(): void;
}

/** How often a lone tenant's dispatch is still watched precisely, for its pace's open time. */
const SAMPLE_EVERY_MS = 1000;

/** One dispatch's watch, and whether its close was (or may be) seen late: then its open time is not the pipeline's. */
export interface DispatchWatch {
  watch: WatchClose;
  seenLate(): boolean;
}

/**
 * Gives each dispatch its watch: the lone one while `mayBeLate(tenant)` but for one precise sample a second (its
 * open time keeps the pace's shortest open time measured, for when others arrive), the precise one otherwise;
 * chosen again at each attempt, and the first precise choice after lone ones sharpens the lone watch's pending.
 */
export class WatchChoice {
  /** A watch went to `lone` since it was last sharpened. */
  private loneWatched = false;
  private nextSampleAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly o: {
      precise: WatchClose;
      lone?: LoneWatch;
      now: () => number;
      mayBeLate: (tenant: string) => boolean;
    },
  ) {}

  forDispatch(tenant: string): DispatchWatch {
    let late = false;
    const watch: WatchClose = (workflowId, runId, signal) => {
      const { lone, precise } = this.o;
      late = false; // each attempt anew: a retry on the precise watch sees its close at once
      if (lone && this.o.mayBeLate(tenant)) {
        if (this.o.now() < this.nextSampleAt) {
          this.loneWatched = true;
          // Bypassing visibility (a store that scans, an outage), the lone watch is the precise one: its open time counts.
          late = lone.seesLate();
          return lone.watch(workflowId, runId, signal);
        }
        this.nextSampleAt = this.o.now() + SAMPLE_EVERY_MS;
        return precise(workflowId, runId, signal);
      }
      if (this.loneWatched) {
        // Another tenant is here (or the bound is needed): the lone tenant's closes are needed promptly now.
        this.loneWatched = false;
        lone?.sharpen();
      }
      return precise(workflowId, runId, signal);
    };
    return { watch, seenLate: () => late };
  }
}

const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 30_000;

/** Counts failed watches across the process, so an outage logs its first and then every hundredth. */
export class WatchFailures {
  private n = 0;

  constructor(private readonly logger: Logger | undefined) {}

  failed(err: unknown, workflowId: string): void {
    this.n++;
    if (!logsRepeat(this.n)) return;
    this.logger?.warn(
      { err, workflowId, failures: this.n },
      'cannot learn whether a dispatch closed; its admission slot stays held, asking again',
    );
  }
}

/** True when the close was seen as it happened; false when gone past retention or when `signal` aborted. */
export async function untilClosed(
  watch: WatchClose,
  execution: { workflowId: string; runId: string },
  signal: AbortSignal,
  failures: WatchFailures,
): Promise<boolean> {
  for (let delayMs = RETRY_MIN_MS; ; delayMs = Math.min(delayMs * 2, RETRY_MAX_MS)) {
    if (signal.aborted) return false;
    try {
      return (await watch(execution.workflowId, execution.runId, signal)) !== false;
    } catch (err) {
      if (signal.aborted) return false;
      failures.failed(err, execution.workflowId);
      // Jittered, so the watches of a recovered Temporal do not all ask in the same second.
      const waitMs = delayMs / 2 + Math.random() * (delayMs / 2);
      await new Promise((r) => setTimeout(r, waitMs).unref());
    }
  }
}
