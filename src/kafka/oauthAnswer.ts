/**
 * How the OAUTHBEARER token provider (./oauthBearer.ts) speaks to a token endpoint, without I/O: the HTTP Basic
 * credentials of its request, and what it reads of an answer (a status that says "not now", a JWT's expiry, the
 * RFC 6749 error code) or of a failed request (its socket code), so that no free text of an answer reaches a log.
 */

/** Statuses that say "not now" rather than "no" (RFC 9110): request timeout, too early, too many requests, 5xx. */
export function transientStatus(status: number): boolean {
  return status === 408 || status === 425 || status === 429 || (status >= 500 && status <= 599);
}

/** The `exp` of a JWT access token, in ms; undefined for an opaque token. */
export function jwtExpiryMs(token: string): number | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const exp = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown }).exp;
    return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** RFC 6749 §5.2's `error` code, only when it is one (no free text from the answer reaches a log line). */
export function oauthErrorCode(body: string): string | undefined {
  try {
    const code = (JSON.parse(body) as { error?: unknown }).error;
    return typeof code === 'string' && /^[a-z_]{1,64}$/i.test(code) ? code : undefined;
  } catch {
    return undefined;
  }
}

/** The socket or undici code of a failed request (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT), for the one line. */
export function networkCode(err: unknown): string {
  for (let e: unknown = err; e && typeof e === 'object'; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  const name = (err as { name?: unknown } | undefined)?.name;
  return typeof name === 'string' ? name : 'error';
}

/** "Basic" credentials of RFC 6749 §2.3.1: id and secret form-encoded, then base64. */
export function basicAuth(id: string, secret: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${enc(id)}:${enc(secret)}`).toString('base64')}`;
}
