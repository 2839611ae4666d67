/**
 * The relay's OAUTHBEARER token (KAFKA_SASL_MECHANISM=oauthbearer): an OAuth 2.0 access token got by the client
 * credentials grant (RFC 6749 §4.4) from the configured token endpoint, cached and fetched again in the
 * background before it expires, handed to kafkajs as its `oauthBearerProvider` (kafkajs asks midway through every
 * connection's authentication and re-authentication, which never waits on the endpoint while a token is valid).
 * A failed grant is an OAuthTokenError whose one-line message names the endpoint variable and the status, never
 * the secret and never the token.
 */
import { setTimeout as setTimeoutPromise } from 'node:timers/promises';
import { parseRetryAfter } from '../activities/classify';
import type { OAuthClientCredentials } from '../config';
import { TOKEN_ENDPOINT_VARIABLE } from '../config/kafkaSasl';
import { shownUrl } from '../redact';
import { basicAuth, jwtExpiryMs, oauthErrorCode, transientStatus } from './oauthAnswer';
import { postTokenRequest } from './tokenRequest';

/**
 * The grant failed. `refused`: the endpoint answered and said no (a 4xx but 408, 425 and 429, or an answer
 * without a token), which waiting does not cure; otherwise it did not answer usably (network, timeout, 408, 425,
 * 429, 5xx), `retryAfterMs` being what its Retry-After asked for. kafkajs retries an error unless it is marked not
 * retriable, so a refusal is reported at once.
 */
export class OAuthTokenError extends Error {
  override readonly name = 'OAuthTokenError';
  readonly variable = TOKEN_ENDPOINT_VARIABLE;
  readonly retriable: boolean;
  constructor(
    readonly reason: string,
    readonly refused: boolean,
    readonly retryAfterMs?: number,
  ) {
    super(`${TOKEN_ENDPOINT_VARIABLE} ${reason}`);
    this.retriable = !refused;
  }
}

export interface OAuthBearerToken {
  value: string;
}

export interface TokenProviderOptions {
  /** How long one attempt of a grant may take, connection to last byte. */
  timeoutMs?: number;
  /** The clock, in ms (tests move it). */
  now?: () => number;
  /** How a wait between attempts is waited (tests record it); it ends early when `signal` aborts. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** How a background refresh is set for later (tests run it by hand); by default a timer that holds no process. */
  schedule?: (run: () => void, ms: number) => void;
}

/** A token is fetched again once this share of its lifetime has passed (Kafka's own clients: 0.8). */
const REFRESH_AT_SHARE = 0.8;
/** An answer without `expires_in` nor a JWT `exp` is used this long (RFC 6749 leaves the lifetime optional). */
const UNKNOWN_LIFETIME_MS = 60_000;
/**
 * A grant the endpoint could not serve is tried again, up to this many attempts, after 1 s, 2 s, 4 s, or after the
 * Retry-After it sent, of at most 30 s; a wait that would end past 30 s from the first attempt is not made.
 */
const GRANT_ATTEMPTS = 4;
const FIRST_BACKOFF_MS = 1_000;
const MAX_RETRY_AFTER_MS = 30_000;
const GRANT_BUDGET_MS = 30_000;
/**
 * Without a valid token, a refusal is given again without asking for this long: every connection of every client
 * asks for a token, and a consumer that fails on the refusal restarts and asks again, so each would be a request to
 * the token endpoint.
 */
const REFUSAL_HOLD_MS = 30_000;
// The refresh timer waits 10 s at least (a token already due, say by clock skew, is not fetched in a loop) and at
// most what a Node timer can (a longer one fires at once).
const MIN_TIMER_MS = 10_000;
const MAX_TIMER_MS = 2 ** 31 - 1;

interface Cached {
  value: string;
  refreshAtMs: number;
  expiresAtMs: number;
}

export class OAuthTokenProvider {
  private cached: Cached | undefined;
  private inFlight: Promise<Cached> | undefined;
  /** After a failed grant: its error, until the wait its last attempt called for (a refusal: REFUSAL_HOLD_MS). */
  private held: { err: OAuthTokenError; untilMs: number } | undefined;
  /** The last attempt that failed for want of an answer, since the last grant that succeeded. */
  private failed: OAuthTokenError | undefined;
  /** The cached token whose failed refresh has a retry timer set: one timer, however many handshakes fail meanwhile. */
  private retryFor: Cached | undefined;
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Aborted by close(): the grant in flight and its waits end, and no refresh is asked for again. */
  private readonly closing = new AbortController();
  private readonly schedule: (run: () => void, ms: number) => void;
  private readonly where: string;

  constructor(
    private readonly creds: OAuthClientCredentials,
    opts: TokenProviderOptions = {},
  ) {
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.now = opts.now ?? Date.now;
    this.sleep =
      opts.sleep ?? ((ms, signal) => setTimeoutPromise(ms, undefined, { signal }).catch(() => undefined));
    this.schedule = opts.schedule ?? ((run, ms) => void setTimeout(run, ms).unref());
    this.where = shownUrl(creds.tokenEndpointUrl);
  }

  /**
   * kafkajs's `oauthBearerProvider`, asked midway through every SASL handshake: the cached token while it has not
   * expired, at once. A new one is got in the background from its refresh point (80% of its lifetime), by a timer
   * and by any call past that point; a failed refresh leaves the cached token in use. Only without a valid token
   * does a call wait for a grant. Callers of the same moment share one grant.
   */
  readonly token = async (): Promise<OAuthBearerToken> => {
    const cached = this.cached;
    if (cached && this.now() < cached.expiresAtMs) {
      if (this.now() >= cached.refreshAtMs) this.refreshInBackground();
      return { value: cached.value };
    }
    return { value: (await this.shared()).value };
  };

  /** What a caller that stopped waiting for a token was waiting on: the endpoint's last failed attempt, if any. */
  readonly lastFailure = (): OAuthTokenError | undefined => this.failed;

  /**
   * The process is done with Kafka: a grant in flight (its request, or its wait between attempts, up to 30 s)
   * ends now with an error and nothing is asked again, so the provider keeps no process from exiting.
   * Idempotent. A token asked for afterwards is the cached one while it is valid.
   */
  close = (): void => this.closing.abort();
  private closed = () =>
    new OAuthTokenError(`${this.where}: no token asked for, the client is closing`, false);

  private refreshInBackground(): void {
    if (this.inFlight || this.closing.signal.aborted) return;
    const before = this.cached;
    // Its failure is the cached token's to outlive (the call after its expiry reports it), and a timer asks again
    // once the wait the endpoint called for is over (10 s at least): an idle client would otherwise keep the old
    // token to its expiry and then wait on the endpoint midway through its next handshake.
    void this.shared().catch(() => {
      if (!before || this.cached !== before) return;
      const waitMs = Math.max(MIN_TIMER_MS, (this.held?.untilMs ?? 0) - this.now());
      if (this.now() + waitMs >= before.expiresAtMs || this.retryFor === before) return;
      this.retryFor = before;
      this.schedule(() => {
        if (this.retryFor === before) this.retryFor = undefined;
        if (this.cached === before) this.refreshInBackground();
      }, waitMs);
    });
  }

  /** The grant in flight, or a new one; its token replaces the cached one and sets the next refresh. */
  private shared(): Promise<Cached> {
    this.inFlight ??= this.grant()
      .then((got) => {
        this.cached = got;
        const refreshInMs = Math.min(Math.max(MIN_TIMER_MS, got.refreshAtMs - this.now()), MAX_TIMER_MS);
        // A timer of a token since replaced does nothing.
        this.schedule(() => {
          if (this.cached === got) this.refreshInBackground();
        }, refreshInMs);
        return got;
      })
      .finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  /**
   * A grant, tried again while the endpoint could not serve it (no answer, 408, 425, 429, 5xx) within the attempts
   * and the time allowed. When it still fails, asking again before the wait it called for has passed gets the same
   * failure without a request: a Retry-After is honoured across callers too. A refusal is not tried again, and is
   * given again without a request for REFUSAL_HOLD_MS.
   */
  private async grant(): Promise<Cached> {
    if (this.held && this.now() < this.held.untilMs) throw this.held.err;
    const startedMs = this.now();
    for (let attempt = 1; ; attempt++) {
      if (this.closing.signal.aborted) throw this.closed();
      try {
        const got = await this.grantOnce();
        this.held = this.failed = undefined;
        return got;
      } catch (err) {
        if (!(err instanceof OAuthTokenError)) throw err;
        this.failed = err;
        if (err.refused) {
          // While the cached token is still valid, a refused refresh is asked again as a failed one is (10 s on):
          // a refusal that passes (an endpoint's hiccup) must not outlive the token it could have replaced.
          const valid = this.cached !== undefined && this.now() < this.cached.expiresAtMs;
          this.held = { err, untilMs: this.now() + (valid ? MIN_TIMER_MS : REFUSAL_HOLD_MS) };
          throw err;
        }
        const waitMs =
          err.retryAfterMs !== undefined && err.retryAfterMs > 0
            ? Math.min(err.retryAfterMs, MAX_RETRY_AFTER_MS)
            : FIRST_BACKOFF_MS * 2 ** (attempt - 1);
        if (attempt >= GRANT_ATTEMPTS || this.now() + waitMs - startedMs > GRANT_BUDGET_MS) {
          this.held = { err, untilMs: this.now() + waitMs };
          throw err;
        }
        await this.sleep(waitMs, this.closing.signal);
      }
    }
  }

  private async grantOnce(): Promise<Cached> {
    const { clientId, clientSecret, clientAuth, scope, audience } = this.creds;
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (clientAuth === 'client_secret_post') {
      form.set('client_id', clientId);
      form.set('client_secret', clientSecret);
    }
    if (scope) form.set('scope', scope);
    if (audience) form.set('audience', audience);
    const startedMs = this.now();
    const answer = await postTokenRequest(
      this.creds.tokenEndpointUrl,
      {
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
          ...(clientAuth === 'client_secret_basic'
            ? { authorization: basicAuth(clientId, clientSecret) }
            : {}),
        },
        form: form.toString(),
      },
      { timeoutMs: this.timeoutMs, closing: this.closing.signal },
    );
    if ('failed' in answer) {
      if (answer.failed === 'closing') throw this.closed();
      const code = answer.failed === 'timeout' ? `no answer within ${this.timeoutMs} ms` : answer.code;
      throw new OAuthTokenError(`${this.where} is unreachable (${code})`, false);
    }
    const { status, body, retryAfter } = answer;
    if (transientStatus(status)) {
      const retryAfterMs = parseRetryAfter(retryAfter, this.now());
      throw new OAuthTokenError(`${this.where} answered HTTP ${status}`, false, retryAfterMs);
    }
    if (status !== 200) {
      const code = oauthErrorCode(body);
      throw new OAuthTokenError(
        `${this.where} refused the client credentials grant of client ${JSON.stringify(clientId)}: HTTP ${status}${code ? ` ${code}` : ''}`,
        true,
      );
    }
    return this.parse(body, startedMs);
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
