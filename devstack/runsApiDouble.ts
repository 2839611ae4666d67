/* eslint-disable max-lines -- the runs API double's admission rules and faults in one server */
/**
 * The tests' stand-in for the runs API's admission layer, served over real HTTP (node:http); the benchmark and
 * the chaos soak use it too, so it lives with the dev stack, which both may import (tools/ never imports test/).
 * Never shipped: the demo's plain sample is ./sampleRunsApi.ts.
 *
 * Behaviour mirrors admission dedup: the first POST /v1/runs for a dispatch_key creates a run (201 with a new
 * run id), every later one answers 409 with the same id. Faults can be scripted per call (a queue shared by
 * all calls), per dispatch_key, or as a standing default, and every request is recorded with its headers and
 * body so tests assert on the wire, not on the relay's own account of it.
 */
import crypto from 'node:crypto';
import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { waitFor } from 'poimen-relay/internal/poll';

export type Fault =
  /**
   * Answer with this status (e.g. 503 with Retry-After, 422) instead of admitting. Echoes, as a careless API's
   * error page might: `echoHeaders` appends the request's headers (authorization included) to the body, and
   * `{{authorization}}` / `{{token}}` in the body become the authorization header / its bearer token.
   */
  | { kind: 'status'; status: number; retryAfter?: string; body?: string; echoHeaders?: boolean }
  /** Wait, then answer normally (or time out the client first). */
  | { kind: 'delay'; ms: number }
  /**
   * Destroy the socket without an answer. `afterAdmit` creates the run first, as when the API committed but
   * the response was lost: the retry must then see 409 and the same run id.
   */
  | { kind: 'drop'; afterAdmit?: boolean }
  /**
   * Hold the request unanswered until the test calls `release()`, then answer normally: a test that must act
   * while a call is at the API (kill the worker, pause the activity) waits on a condition, not a time window.
   */
  | { kind: 'hold' };

export interface RecordedRequest {
  seq: number;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  json: unknown;
  receivedAtMs: number;
  /** What the double answered: a status, or 'dropped'. */
  answer: number | 'dropped';
  runId?: string;
  /** The run this call was deduplicated under (dispatch_key, or `<tenant>/<dispatch_key>` when tenant-scoped). */
  runKey?: string;
  /** The fault scripted for this call, if any; 'cut': in flight when `refuseConnections()` destroyed its socket. */
  fault?: Fault['kind'] | 'cut';
  /**
   * The API admitted the run (created or found it) and the client never heard so: dropped after admission, or
   * the client had hung up (its timeout, a kill, a cut) before the answer went out. Only such a call explains a
   * 409 on its retry; a drop before admission, or a delay the client waited out, does not.
   */
  answerLost?: boolean;
}

export interface RunsApiOptions {
  port?: number;
  /** When set, requests without `authorization: Bearer <token>` get 401. */
  token?: string;
  /** Keep request bodies and headers (the benchmark turns this off to stay lean). */
  record?: boolean;
  /** Serve HTTPS with this certificate (PEM) instead of plain HTTP. */
  tls?: { key: string | Buffer; cert: string | Buffer };
  /**
   * Admission dedup per tenant (`x-tenant-id`) as well as dispatch_key, as a multi-tenant API does; `runs` is
   * then keyed `<tenant>/<dispatch_key>`. Off by default: `runs` keyed by dispatch_key alone.
   */
  tenantScoped?: boolean;
}

export class RunsApiDouble {
  readonly requests: RecordedRequest[] = [];
  /** dispatch_key → run id: the runs that exist. */
  readonly runs = new Map<string, string>();
  private readonly queue: Fault[] = [];
  private readonly perKey = new Map<string, Fault[]>();
  private standing: Fault | undefined;
  private policy: ((dispatchKey: string | undefined) => Fault | undefined) | undefined;
  private seq = 0;
  private held: (() => void)[] = [];
  /** Requests received and not yet answered or dropped, now and at most at once (what the relay had in flight). */
  inFlight = 0;
  maxInFlight = 0;
  private readonly open = new Set<RecordedRequest>();
  private readonly waiters = new Set<() => void>();
  private readonly sockets = new Set<Socket>();
  private closed = false;
  private boundPort = 0;

  private constructor(
    private readonly server: http.Server | https.Server,
    private readonly opts: RunsApiOptions,
  ) {}

  static async start(opts: RunsApiOptions = {}): Promise<RunsApiDouble> {
    const server = opts.tls
      ? https.createServer({ key: opts.tls.key, cert: opts.tls.cert })
      : http.createServer();
    server.keepAliveTimeout = 30_000;
    const double = new RunsApiDouble(server, { record: true, ...opts });
    server.on(
      'request',
      (req: http.IncomingMessage, res: http.ServerResponse) => void double.handle(req, res),
    );
    server.on('connection', (s) => {
      double.sockets.add(s);
      s.on('close', () => double.sockets.delete(s));
    });
    await double.listen(opts.port ?? 0);
    return double;
  }

  private listen(port: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        this.boundPort = (this.server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  /** Kept while refusing connections, when the server has no address. */
  get port(): number {
    return this.boundPort;
  }

  /**
   * An API that is down at the TCP level: stops listening and destroys every open connection, so each call fails
   * with ECONNREFUSED (or a reset, if it was on a kept-alive socket) until `acceptConnections()`.
   */
  async refuseConnections(): Promise<void> {
    if (!this.server.listening) return;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const r of this.open) r.fault ??= 'cut';
    for (const s of this.sockets) s.destroy();
    await closed;
  }

  /** Listens again on the same port (the relay keeps its RUNS_API_URL); retried while another socket holds it. */
  async acceptConnections(): Promise<void> {
    if (this.closed) throw new Error('runs API double: closed');
    if (this.server.listening) return;
    const port = this.boundPort;
    await waitFor(() => this.listen(port).then(() => true), {
      timeoutMs: 10_000,
      what: `port ${port} to listen on again`,
    });
  }

  get url(): string {
    return `${this.opts.tls ? 'https' : 'http'}://127.0.0.1:${this.port}`;
  }

  /** Faults for the next calls, in order, whatever their dispatch_key. */
  script(...faults: Fault[]): this {
    this.queue.push(...faults);
    return this;
  }

  /** Faults for the next calls carrying this dispatch_key, in order. */
  scriptFor(dispatchKey: string, ...faults: Fault[]): this {
    this.perKey.set(dispatchKey, [...(this.perKey.get(dispatchKey) ?? []), ...faults]);
    return this;
  }

  /** A fault every call gets until cleared (undefined): e.g. an API that is down. */
  always(fault: Fault | undefined): this {
    this.standing = fault;
    return this;
  }

  /** Decides a fault per call when nothing is scripted: e.g. a random share of 503s and dropped sockets. */
  faultPolicy(decide: ((dispatchKey: string | undefined) => Fault | undefined) | undefined): this {
    this.policy = decide;
    return this;
  }

  /** Requests held by a `hold` fault right now. */
  get heldCount(): number {
    return this.held.length;
  }

  /** Lets every held request go on (it is then answered as if it had just arrived); returns how many. */
  release(): number {
    const held = this.held;
    this.held = [];
    for (const go of held) go();
    return held.length;
  }

  requestsFor(dispatchKey: string): RecordedRequest[] {
    return this.requests.filter(
      (r) => (r.json as { dispatch_key?: unknown } | undefined)?.dispatch_key === dispatchKey,
    );
  }

  /** Resolves once `predicate` holds, re-checked when each request arrives and when it is answered; rejects after timeoutMs. */
  async waitFor(predicate: (api: this) => boolean, timeoutMs = 60_000, what = 'condition'): Promise<void> {
    if (predicate(this)) return;
    await new Promise<void>((resolve, reject) => {
      const check = () => {
        if (predicate(this)) {
          clearTimeout(timer);
          this.waiters.delete(check);
          resolve();
        }
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(
          new Error(
            `runs API double: timed out after ${timeoutMs} ms waiting for ${what}; ${this.requests.length} requests so far`,
          ),
        );
      }, timeoutMs);
      this.waiters.add(check);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.release();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private nextFault(dispatchKey: string | undefined): Fault | undefined {
    const keyed = dispatchKey === undefined ? undefined : this.perKey.get(dispatchKey);
    if (keyed && keyed.length > 0) return keyed.shift();
    if (this.queue.length > 0) return this.queue.shift();
    return this.policy?.(dispatchKey) ?? this.standing;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const receivedAtMs = Date.now();
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      json = undefined;
    }
    const rec: RecordedRequest = {
      seq: ++this.seq,
      method: req.method ?? '',
      path: req.url ?? '',
      headers: this.opts.record ? req.headers : {},
      body: this.opts.record ? body : '',
      json,
      receivedAtMs,
      answer: 0,
    };
    this.requests.push(rec);
    this.open.add(rec);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    let open = true;
    // The client hung up before the answer was written (its own timeout, a killed worker, a cut connection).
    let clientGone = false;
    res.once('close', () => {
      if (!res.writableFinished) clientGone = true;
    });
    const unheard = () => clientGone || res.destroyed || req.socket.destroyed;
    const done = () => {
      this.open.delete(rec);
      if (open) this.inFlight--;
      open = false;
    };
    // Waiters see a request when it arrives, not only when it is answered: a test that acts "while the call is
    // at the API" (e.g. kills the worker during a scripted delay) must not wake after the answer went out.
    this.notify();
    const answer = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      rec.answer = status;
      done();
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(payload));
      this.notify();
    };

    if (req.method !== 'POST' || req.url !== '/v1/runs') return answer(404, { error: 'not found' });
    if (this.opts.token !== undefined && req.headers.authorization !== `Bearer ${this.opts.token}`) {
      return answer(401, { error: 'unauthorized' });
    }
    const dispatchKey = (json as { dispatch_key?: unknown } | undefined)?.dispatch_key;
    if (typeof dispatchKey !== 'string')
      return answer(400, { error: 'body must be JSON with a dispatch_key' });

    const fault = this.nextFault(dispatchKey);
    if (fault) rec.fault = fault.kind;
    if (fault?.kind === 'delay') await new Promise((r) => setTimeout(r, fault.ms));
    if (fault?.kind === 'hold') {
      await new Promise<void>((r) => {
        this.held.push(r);
        this.notify();
      });
    }
    if (fault?.kind === 'status') {
      const authorization = req.headers.authorization ?? '';
      const echoed = fault.body
        ?.replaceAll('{{authorization}}', authorization)
        .replaceAll('{{token}}', authorization.replace(/^Bearer /, ''));
      const body = fault.echoHeaders
        ? `${echoed ?? ''}${JSON.stringify({ echoed_headers: req.headers })}`
        : echoed;
      return answer(
        fault.status,
        body ?? { error: `scripted ${fault.status}` },
        fault.retryAfter ? { 'retry-after': fault.retryAfter } : {},
      );
    }
    const runKey = this.opts.tenantScoped
      ? `${String(req.headers['x-tenant-id'])}/${dispatchKey}`
      : dispatchKey;
    rec.runKey = runKey;
    if (fault?.kind === 'drop') {
      if (fault.afterAdmit) {
        this.admit(runKey);
        rec.answerLost = true;
      }
      rec.answer = 'dropped';
      done();
      req.socket.destroy();
      this.notify();
      return;
    }
    rec.answerLost = unheard();
    const existing = this.runs.get(runKey);
    if (existing !== undefined) {
      rec.runId = existing;
      return answer(409, { run_id: existing, admission: 'existing' });
    }
    rec.runId = this.admit(runKey);
    answer(201, { run_id: rec.runId, admission: 'created' });
  }

  private admit(dispatchKey: string): string {
    const existing = this.runs.get(dispatchKey);
    if (existing) return existing;
    const runId = `run-${crypto.randomUUID()}`;
    this.runs.set(dispatchKey, runId);
    return runId;
  }

  private notify(): void {
    for (const w of [...this.waiters]) w();
  }
}
