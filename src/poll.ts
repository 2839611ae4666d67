/**
 * Waiting on a condition, never on the clock: the one polling loop of the relay, its dev stack, its tools and
 * its tests (test/support/wait.ts re-exports waitFor). Two spellings of it, for the two ways a caller wants to
 * learn that time ran out: `waitUntil` answers false (the stack and the demo go on and report), `waitFor`
 * throws naming what it waited for (a test fails there). And waiting on work a caller may give up on:
 * `untilAborted`.
 */

export interface PollOptions {
  timeoutMs: number;
  /** Pause between checks. */
  intervalMs?: number;
  /** A check that throws counts as "not yet" (the last error is kept for the report) instead of ending the wait. */
  retryErrors?: boolean;
}

export type Polled<T> = { done: true; value: T } | { done: false; lastError: unknown };

/** Polls `check` until it returns a value other than undefined/false, or until `timeoutMs` has passed. */
export async function poll<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  opts: PollOptions,
): Promise<Polled<T>> {
  const { timeoutMs, intervalMs = 100, retryErrors = false } = opts;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return { done: true, value };
    } catch (err) {
      if (!retryErrors) throw err;
      lastError = err;
    }
    if (Date.now() >= deadline) return { done: false, lastError };
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** True once `check` holds, false when `timeoutMs` passed first; an error from `check` ends the wait. */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  intervalMs = 100,
): Promise<boolean> {
  return (await poll(check, { timeoutMs, intervalMs })).done;
}

/**
 * The first value other than undefined/false that `check` returns; throws "timed out … waiting for <what>"
 * (with the last error `check` threw, which counts as "not yet") when `timeoutMs` passes first.
 */
export async function waitFor<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const { timeoutMs = 60_000, intervalMs = 100, what = 'condition' } = opts;
  const polled = await poll(check, { timeoutMs, intervalMs, retryErrors: true });
  if (polled.done) return polled.value;
  const suffix = polled.lastError instanceof Error ? ` (last error: ${polled.lastError.message})` : '';
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${suffix}`);
}

/**
 * Waits for `work` unless `signal` aborts first, then rejects with the signal's reason; `work` itself goes on
 * (what it holds is let go when it ends, not when its caller stops waiting).
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    // Nobody waits for `work` now: its failure must not be an unhandled rejection.
    work.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
