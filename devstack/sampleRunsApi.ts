/**
 * A sample runs API for the demo and `docker compose`: the admission layer's behaviour and nothing else. The
 * first `POST /v1/runs` of a dispatch_key creates a run (201 and a new run id), every later one answers 409 with
 * the same id; a dispatch_key may be given answers to send first (a 422 refusal, a 503 with Retry-After), so the
 * demo shows each outcome. The tests' double (./runsApiDouble.ts) adds faults and recording; it is not
 * part of what the relay ships.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SampleAnswer {
  status: number;
  body?: string;
  retryAfter?: string;
}

export interface SampleCall {
  dispatchKey: string;
  /** The status answered. */
  status: number;
}

export class SampleRunsApi {
  /** dispatch_key → run id: the runs that exist. */
  readonly runs = new Map<string, string>();
  readonly calls: SampleCall[] = [];
  private readonly scripted = new Map<string, SampleAnswer[]>();

  private constructor(private readonly server: http.Server) {}

  static async start(opts: { port?: number; host?: string } = {}): Promise<SampleRunsApi> {
    const server = http.createServer();
    const api = new SampleRunsApi(server);
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => void api.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
    });
    return api;
  }

  get url(): string {
    const { address, port } = this.server.address() as AddressInfo;
    return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
  }

  /** Answers the next calls of this dispatch_key get before admission, in order. */
  answerFirst(dispatchKey: string, ...answers: SampleAnswer[]): this {
    this.scripted.set(dispatchKey, [...(this.scripted.get(dispatchKey) ?? []), ...answers]);
    return this;
  }

  callsFor(dispatchKey: string): SampleCall[] {
    return this.calls.filter((c) => c.dispatchKey === dispatchKey);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const answer = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(typeof payload === 'string' ? payload : JSON.stringify(payload));
      return status;
    };
    if (req.method !== 'POST' || req.url !== '/v1/runs') return void answer(404, { error: 'not found' });
    let dispatchKey: unknown;
    try {
      dispatchKey = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { dispatch_key?: unknown })
        .dispatch_key;
    } catch {
      dispatchKey = undefined;
    }
    if (typeof dispatchKey !== 'string') {
      return void answer(400, { error: 'body must be JSON with a dispatch_key' });
    }
    const scripted = this.scripted.get(dispatchKey)?.shift();
    if (scripted) {
      const headers: Record<string, string> = scripted.retryAfter
        ? { 'retry-after': scripted.retryAfter }
        : {};
      const status = answer(
        scripted.status,
        scripted.body ?? { error: `sample ${scripted.status}` },
        headers,
      );
      this.calls.push({ dispatchKey, status });
      return;
    }
    const existing = this.runs.get(dispatchKey);
    if (existing !== undefined) {
      this.calls.push({ dispatchKey, status: answer(409, { run_id: existing, admission: 'existing' }) });
      return;
    }
    const runId = `run-${crypto.randomUUID()}`;
    this.runs.set(dispatchKey, runId);
    this.calls.push({ dispatchKey, status: answer(201, { run_id: runId, admission: 'created' }) });
  }
}
