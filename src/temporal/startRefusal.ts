/**
 * Which failed workflow starts are this record's own fault. Decided by the gRPC status code the server answered
 * (never by message text): INVALID_ARGUMENT refuses this request whatever the server's state (an input over the
 * blob size limit, a value Temporal cannot index) and would be refused again on every retry, stalling the
 * partition behind it, so the record is dead-lettered with the server's reason. Every other code (UNAVAILABLE,
 * DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, and the credential and namespace errors operators fix) is an outage the
 * ingester waits out.
 */
const PER_RECORD_CODES: Record<number, string> = { 3: 'INVALID_ARGUMENT' };

export interface StartRefusal {
  code: string;
  details: string;
}

export function startRefusal(err: unknown): StartRefusal | undefined {
  const seen = new Set<unknown>();
  for (
    let e: unknown = err;
    e && typeof e === 'object' && !seen.has(e);
    e = (e as { cause?: unknown }).cause
  ) {
    seen.add(e);
    const { code, details } = e as { code?: unknown; details?: unknown };
    // A gRPC status error: a numeric code with the server's text in `details`.
    if (typeof code === 'number' && typeof details === 'string') {
      const name = PER_RECORD_CODES[code];
      return name === undefined ? undefined : { code: name, details };
    }
  }
  return undefined;
}
