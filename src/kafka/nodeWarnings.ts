/**
 * Node warnings the Kafka client raises by design (owner: the Kafka port). kafkajs 2.2.4's request queue
 * (network/requestQueue, scheduleCheckPendingRequests) arms its throttle check with `throttledUntil - Date.now()`,
 * which is negative whenever nothing is throttled; setTimeout has always run such a timer after 1 ms, and from
 * Node 23 on it also prints a TimeoutNegativeWarning to stderr, once per call. On the image's Node 24 that put a
 * multi-line warning before a command's one-line error and into the relay's JSON log stream. Only that warning
 * is dropped, and only once installed by an executable; every other warning is printed as before.
 */
const DROPPED = 'TimeoutNegativeWarning';

type EmitWarning = typeof process.emitWarning;

function typeOf(rest: unknown[]): string | undefined {
  const [typeOrOptions] = rest;
  if (typeof typeOrOptions === 'string') return typeOrOptions;
  if (typeOrOptions && typeof typeOrOptions === 'object') return (typeOrOptions as { type?: string }).type;
  return undefined;
}

/** Drops the Kafka client's TimeoutNegativeWarning; idempotent. Returns what undoes it (for tests). */
export function dropKafkaTimerWarnings(): () => void {
  const current = process.emitWarning as EmitWarning & { poimenDropsTimerWarnings?: true };
  if (current.poimenDropsTimerWarnings) return () => undefined;
  const filtered = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    const type = warning instanceof Error ? warning.name : typeOf(rest);
    if (type === DROPPED) return;
    return (current as (...args: unknown[]) => void).call(process, warning, ...rest);
  } as EmitWarning & { poimenDropsTimerWarnings?: true };
  filtered.poimenDropsTimerWarnings = true;
  process.emitWarning = filtered;
  return () => {
    if (process.emitWarning === filtered) process.emitWarning = current;
  };
}
