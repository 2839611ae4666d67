/**
 * The relay's OAUTHBEARER token (KAFKA_SASL_MECHANISM=oauthbearer): an OAuth 2.0 access token got by the client
 * credentials grant (RFC 6749 §4.4) from the configured token endpoint, cached and fetched again before it
 * expires, handed to kafkajs as its `oauthBearerProvider` (kafkajs asks at every connection's authentication and
 * re-authentication). A failed grant is an OAuthTokenError whose one-line message names the endpoint variable
 * and the status, never the secret and never the token.
 */
import { request } from 'undici';
import type { OAuthClientCredentials } from '../config';
import { TOKEN_ENDPOINT_VARIABLE } from '../config/kafkaSasl';
import { shownUrl } from '../redact';

/**
 * The grant failed. `refused`: the endpoint answered and said no (a 4xx, or an answer without a token), which
 * waiting does not cure; otherwise it did not answer usably (network, timeout, 5xx). kafkajs retries an error
 * unless it is marked not retriable, so a refusal is reported at once.
 */
export class OAuthTokenError extends Error {
  override readonly name = 'OAuthTokenError';
  readonly variable = TOKEN_ENDPOINT_VARIABLE;
  readonly retriable: boolean;
  constructor(
    readonly reason: string,
    readonly refused: boolean,
  ) {
    super(`${TOKEN_ENDPOINT_VARIABLE} ${reason}`);
    this.retriable = !refused;
  }
}

export interface OAuthBearerToken {
  value: string;
}

export interface TokenProviderOptions {
  /** How long one grant may take, connection to last byte. */
  timeoutMs?: number;
  /** The clock, in ms (tests move it). */
  now?: () => number;
}

/** A token is fetched again once this share of its lifetime has passed (Kafka's own clients: 0.8). */
const REFRESH_AT_SHARE = 0.8;
/** An answer without `expires_in` nor a JWT `exp` is used this long (RFC 6749 leaves the lifetime optional). */
const UNKNOWN_LIFETIME_MS = 60_000;
/** A token endpoint's answer is a small JSON object; more than this is not read. */
const MAX_ANSWER_BYTES = 64 * 1024;

interface Cached {
  value: string;
  refreshAtMs: number;
  expiresAtMs: number;
}

/** The `exp` of a JWT access token, in ms; undefined for an opaque token. */
function jwtExpiryMs(token: string): number | undefined {
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
function oauthErrorCode(body: string): string | undefined {
  try {
    const code = (JSON.parse(body) as { error?: unknown }).error;
    return typeof code === 'string' && /^[a-z_]{1,64}$/i.test(code) ? code : undefined;
  } catch {
    return undefined;
  }
}

/** The socket or undici code of a failed request (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT), for the one line. */
function networkCode(err: unknown): string {
  for (let e: unknown = err; e && typeof e === 'object'; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  const name = (err as { name?: unknown } | undefined)?.name;
  return typeof name === 'string' ? name : 'error';
}

/** "Basic" credentials of RFC 6749 §2.3.1: id and secret form-encoded, then base64. */
function basicAuth(id: string, secret: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${enc(id)}:${enc(secret)}`).toString('base64')}`;
}

export class OAuthTokenProvider {
  private cached: Cached | undefined;
  private inFlight: Promise<Cached> | undefined;
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private readonly where: string;

  constructor(
    private readonly creds: OAuthClientCredentials,
    opts: TokenProviderOptions = {},
  ) {
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.now = opts.now ?? Date.now;
    this.where = shownUrl(creds.tokenEndpointUrl);
  }

  /**
   * kafkajs's `oauthBearerProvider`: the cached token while it is fresh; past its refresh point a new one, all
   * callers of the moment sharing one grant. When that grant fails and the cached token has not expired, the
   * cached one is used and the next call tries again.
   */
  readonly token = async (): Promise<OAuthBearerToken> => {
    const now = this.now();
    const cached = this.cached;
    if (cached && now < cached.refreshAtMs) return { value: cached.value };
    try {
      this.inFlight ??= this.grant().finally(() => (this.inFlight = undefined));
      this.cached = await this.inFlight;
      return { value: this.cached.value };
    } catch (err) {
      if (cached && this.now() < cached.expiresAtMs) return { value: cached.value };
      throw err;
    }
  };

  private async grant(): Promise<Cached> {
    const { clientId, clientSecret, clientAuth, scope, audience } = this.creds;
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (clientAuth === 'client_secret_post') {
      form.set('client_id', clientId);
      form.set('client_secret', clientSecret);
    }
    if (scope) form.set('scope', scope);
    if (audience) form.set('audience', audience);
    const startedMs = this.now();
    let status: number;
    let body: string;
    try {
      const res = await request(this.creds.tokenEndpointUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
          ...(clientAuth === 'client_secret_basic'
            ? { authorization: basicAuth(clientId, clientSecret) }
            : {}),
        },
        body: form.toString(),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      status = res.statusCode;
      body = await this.readBounded(res.body);
    } catch (err) {
      // AbortSignal.timeout's reason is a DOMException, which is not an Error in every realm.
      const timedOut = (err as { name?: unknown } | undefined)?.name === 'TimeoutError';
      const code = timedOut ? `no answer within ${this.timeoutMs} ms` : networkCode(err);
      throw new OAuthTokenError(`${this.where} is unreachable (${code})`, false);
    }
    if (status >= 500) throw new OAuthTokenError(`${this.where} answered HTTP ${status}`, false);
    if (status !== 200) {
      const code = oauthErrorCode(body);
      throw new OAuthTokenError(
        `${this.where} refused the client credentials grant of client ${JSON.stringify(clientId)}: HTTP ${status}${code ? ` ${code}` : ''}`,
        true,
      );
    }
    return this.parse(body, startedMs);
  }

  private async readBounded(stream: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of stream) {
      size += chunk.length;
      if (size > MAX_ANSWER_BYTES) {
        stream.destroy();
        break;
      }
      chunks.push(chunk);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  /** The token of a 200 answer; its lifetime counted from when the grant was sent (the safe side). */
  private parse(body: string, startedMs: number): Cached {
    let answer: { access_token?: unknown; expires_in?: unknown };
    try {
      answer = JSON.parse(body) as typeof answer;
    } catch {
      answer = {};
    }
    const value = answer.access_token;
    if (typeof value !== 'string' || value.length === 0)
      throw new OAuthTokenError(`${this.where} answered HTTP 200 without an access_token`, true);
    const expiresIn = Number(answer.expires_in);
    const lifetimeMs =
      answer.expires_in !== undefined && Number.isFinite(expiresIn) && expiresIn > 0
        ? expiresIn * 1000
        : (jwtExpiryMs(value) ?? startedMs + UNKNOWN_LIFETIME_MS) - startedMs;
    return {
      value,
      refreshAtMs: startedMs + Math.max(0, lifetimeMs) * REFRESH_AT_SHARE,
      expiresAtMs: startedMs + lifetimeMs,
    };
  }
}
