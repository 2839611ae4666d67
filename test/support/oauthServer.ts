/**
 * A test OAuth 2.0 authorization server on 127.0.0.1 (node:http, node:crypto): POST /token answers the client
 * credentials grant of one client, by HTTP Basic or in the form, with an RS256-signed JWT access token; GET /jwks
 * serves the public key, as Kafka's OAuthBearerValidatorCallbackHandler (KIP-768) fetches it to check tokens.
 * Records every grant it was sent, and can be told to answer with another status.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OAuthServerOptions {
  clientId: string;
  clientSecret: string;
  /** Lifetime of an issued token, as `expires_in` and the JWT's `exp`. */
  lifetimeS?: number;
  /** The JWT's `iss` and `aud`. */
  issuer?: string;
  audience?: string;
  /** Leave `expires_in` out of the answer (the JWT's `exp` still says it). */
  omitExpiresIn?: boolean;
}

export interface Grant {
  /** How the client authenticated: `basic`, `post`, or `none`. */
  auth: 'basic' | 'post' | 'none';
  form: Record<string, string>;
  status: number;
}

function b64url(data: string | Buffer): string {
  return Buffer.from(data).toString('base64url');
}

export class OAuthServer {
  readonly grants: Grant[] = [];
  /**
   * When set, every grant is answered with this status and an RFC 6749 error body, with a `Retry-After` header
   * when given; only the next `times` grants when that is given.
   */
  failWith: { status: number; error: string; retryAfter?: string; times?: number } | undefined;
  /** When set, a grant is answered only once this has settled (a slow endpoint). */
  answerAfter: Promise<unknown> | undefined;
  /** Grant requests received whole, answered or not yet (see answerAfter). */
  received = 0;
  private issued = 0;
  private readonly keys = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  private readonly kid = crypto.randomUUID();

  private constructor(
    private readonly server: http.Server,
    readonly opts: OAuthServerOptions,
  ) {}

  static async start(opts: OAuthServerOptions): Promise<OAuthServer> {
    const server = http.createServer();
    const s = new OAuthServer(server, opts);
    server.on('request', (req, res) => s.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return s;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  get tokenUrl(): string {
    return `${this.url}/token`;
  }
  get jwksUrl(): string {
    return `${this.url}/jwks`;
  }

  /** An RS256 JWT for `sub`, signed with this server's key. */
  sign(claims: Record<string, unknown>): string {
    const header = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: this.kid }));
    const payload = b64url(JSON.stringify(claims));
    const signature = crypto.sign('sha256', Buffer.from(`${header}.${payload}`), this.keys.privateKey);
    return `${header}.${payload}.${b64url(signature)}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'GET' && req.url === '/jwks') {
      const jwk = this.keys.publicKey.export({ format: 'jwk' });
      json(200, { keys: [{ ...jwk, kid: this.kid, alg: 'RS256', use: 'sig' }] });
      return;
    }
    if (req.method !== 'POST' || req.url !== '/token') {
      json(404, { error: 'not_found' });
      return;
    }
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (raw += c));
    // Dropped: the answer is written by grant(), after the hold a test may have set.
    req.on('end', () => {
      this.received++;
      void (this.answerAfter ?? Promise.resolve()).finally(() => this.grant(req, raw, json));
    });
  }

  private grant(
    req: http.IncomingMessage,
    raw: string,
    json: (status: number, body: unknown, headers?: Record<string, string>) => void,
  ): void {
    const form = Object.fromEntries(new URLSearchParams(raw));
    const { auth, id, secret } = this.credentials(req, form);
    const grant: Grant = { auth, form, status: 200 };
    this.grants.push(grant);
    const refuse = (status: number, error: string, headers?: Record<string, string>) => {
      grant.status = status;
      json(status, { error, error_description: `client ${id ?? '?'} refused` }, headers);
    };
    const fail = this.failWith;
    if (fail) {
      if (fail.times !== undefined && --fail.times <= 0) this.failWith = undefined;
      return refuse(fail.status, fail.error, fail.retryAfter ? { 'retry-after': fail.retryAfter } : {});
    }
    if (form['grant_type'] !== 'client_credentials') return refuse(400, 'unsupported_grant_type');
    if (id !== this.opts.clientId || secret !== this.opts.clientSecret) return refuse(401, 'invalid_client');
    const lifetimeS = this.opts.lifetimeS ?? 3600;
    const nowS = Math.floor(Date.now() / 1000);
    this.issued += 1;
    const token = this.sign({
      sub: id,
      iat: nowS,
      exp: nowS + lifetimeS,
      jti: `${this.issued}`,
      ...(this.opts.issuer ? { iss: this.opts.issuer } : {}),
      ...(this.opts.audience ? { aud: this.opts.audience } : {}),
      ...(form['scope'] ? { scope: form['scope'] } : {}),
    });
    json(200, {
      access_token: token,
      token_type: 'Bearer',
      ...(this.opts.omitExpiresIn ? {} : { expires_in: lifetimeS }),
    });
  }

  private credentials(
    req: http.IncomingMessage,
    form: Record<string, string>,
  ): { auth: Grant['auth']; id?: string; secret?: string } {
    const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
    if (basic) {
      const [id = '', secret = ''] = Buffer.from(basic[1]!, 'base64').toString('utf8').split(':');
      const dec = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
      return { auth: 'basic', id: dec(id), secret: dec(secret) };
    }
    if (form['client_id'] !== undefined)
      return { auth: 'post', id: form['client_id'], secret: form['client_secret'] };
    return { auth: 'none' };
  }
}
