/**
 * `docker compose up` on its own shows the relay at work: a sample runs API and a producer of sample
 * dispatches (deploy/compose/) run beside it on stock images. No Docker engine here: the compose wiring is
 * parsed, and the two scripts are run as they are (the runs API with node, the producer with a stand-in for
 * Kafka's console producer that keeps what it is given), their output checked against the contract.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { validateDispatch } from '../../src/contract';
import { freePort } from '../../devstack/ports';
import { waitFor } from '../support/wait';

const root = path.resolve(__dirname, '..', '..');
const SAMPLES = 'deploy/compose';

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  depends_on?: Record<string, { condition?: string }>;
  restart?: string;
  healthcheck?: { test?: string[] };
  user?: string;
}
const compose = parse(fs.readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const service = (name: string): Service => compose.services[name] as Service;

/** The host file behind a container path, through the service's bind mounts. */
function hostFile(s: Service, containerPath: string): string {
  for (const v of s.volumes ?? []) {
    const [host, target] = v.split(':') as [string, string];
    if (containerPath.startsWith(`${target}/`)) return `${host}/${containerPath.slice(target.length + 1)}`;
  }
  throw new Error(`${containerPath} is not mounted`);
}

describe('docker-compose.yml samples', () => {
  it('runs both samples on stock images from read-only mounts of deploy/compose, never built into the relay image', () => {
    for (const name of ['runs-api', 'producer']) {
      const s = service(name);
      expect(s.build).toBeUndefined();
      expect(s.image).not.toMatch(/poimen-relay/);
      expect(s.volumes).toEqual([`./${SAMPLES}:/samples:ro`]);
    }
    expect(service('runs-api').image).toBe('node:24-bookworm-slim');
    expect(hostFile(service('runs-api'), service('runs-api').command?.[1] ?? '')).toBe(
      `./${SAMPLES}/runs-api.mjs`,
    );
    // The producer is Kafka's own console producer, from the same image as the broker.
    expect(service('producer').image).toBe(service('kafka').image);
    expect(hostFile(service('producer'), service('producer').entrypoint?.[1] ?? '')).toBe(
      `./${SAMPLES}/produce-samples.sh`,
    );
  });

  it('points the worker at the sample runs API by default, overridable by RUNS_API_URL', () => {
    const worker = service('worker');
    expect(worker.environment?.RUNS_API_URL).toBe('${RUNS_API_URL:-http://runs-api:8080}');
    // Nothing but the producer depends on a sample, so `docker compose up <the relay's services>` leaves them out.
    for (const [name, s] of Object.entries(compose.services)) {
      const deps = Object.keys(s.depends_on ?? {});
      expect({ name, onApi: deps.includes('runs-api'), onProducer: deps.includes('producer') }).toEqual({
        name,
        onApi: name === 'producer',
        onProducer: false,
      });
    }
    const api = service('runs-api');
    expect(api.user).toBe('node');
    expect(api.environment?.PORT).toBe('8080');
    expect(api.environment?.RUNS_API_TOKEN).toBe(worker.environment?.RUNS_API_TOKEN);
    expect(api.ports).toEqual(['127.0.0.1:8080:8080']);
    expect(api.healthcheck?.test?.join(' ')).toContain('/healthz');
  });

  it('publishes once the topics exist and the relay is ready, to the tenant the topics service declares', () => {
    const producer = service('producer');
    expect(producer.restart).toBe('no');
    expect(producer.depends_on).toEqual({
      topics: { condition: 'service_completed_successfully' },
      ingester: { condition: 'service_healthy' },
      worker: { condition: 'service_healthy' },
      'runs-api': { condition: 'service_healthy' },
    });
    const topicsCmd = service('topics').command ?? [];
    expect(producer.environment?.TENANT).toBe(topicsCmd[topicsCmd.indexOf('--tenant') + 1]);
    expect(producer.environment?.KAFKA_BROKERS).toBe(service('worker').environment?.KAFKA_BROKERS);
  });
});

describe('deploy/compose/produce-samples.sh', () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-samples-'));
  afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

  it('gives the console producer five valid dispatches (one twice) and one malformed record, keyed by dispatch key', () => {
    // Stand-in for kafka-console-producer.sh: keeps its arguments and the lines it reads.
    const bin = path.join(work, 'bin');
    fs.mkdirSync(bin);
    fs.writeFileSync(
      path.join(bin, 'kafka-console-producer.sh'),
      `#!/bin/sh\nprintf '%s\\n' "$@" > "${work}/args"\ncat > "${work}/lines"\n`,
      { mode: 0o755 },
    );
    const out = execFileSync('sh', [path.join(root, SAMPLES, 'produce-samples.sh')], {
      env: {
        PATH: process.env.PATH,
        KAFKA_BIN: bin,
        TENANT: 'demo',
        SAMPLE_RUN: 'r1',
        KAFKA_BROKERS: 'k:9092',
      },
      encoding: 'utf8',
    });
    expect(out).toContain('published 6 sample records to poimen.demo.dispatch');
    const args = fs.readFileSync(path.join(work, 'args'), 'utf8').trim().split('\n');
    expect(args).toEqual([
      '--bootstrap-server',
      'k:9092',
      '--topic',
      'poimen.demo.dispatch',
      '--property',
      'parse.key=true',
      '--property',
      'key.separator=|',
      '--producer-property',
      'acks=all',
    ]);
    const records = fs
      .readFileSync(path.join(work, 'lines'), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => ({ key: l.slice(0, l.indexOf('|')), value: l.slice(l.indexOf('|') + 1) }));
    const results = records.map((r) => ({
      key: r.key,
      result: validateDispatch(Buffer.from(r.value), { tenant: 'demo', maxBytes: 1024 * 1024 }),
    }));
    const valid = results.flatMap((r) => (r.result.ok ? [r] : []));
    expect(valid.map((r) => r.key)).toEqual([
      'demo:compose-r1-welcome',
      'demo:compose-r1-report',
      'demo:compose-r1-welcome',
      'demo:compose-r1-flaky',
      'demo:compose-r1-refused',
    ]);
    const invalid = results.filter((r) => !r.result.ok);
    expect(invalid).toHaveLength(1);
    expect(invalid[0]).toMatchObject({
      key: 'demo:compose-r1-malformed',
      result: { type: 'malformed_dispatch' },
    });
  });
});

describe('deploy/compose/runs-api.mjs', () => {
  let api: ChildProcess | undefined;
  let url = '';
  let log = '';
  beforeAll(async () => {
    const port = await freePort();
    api = spawn(process.execPath, [path.join(root, SAMPLES, 'runs-api.mjs')], {
      env: { PATH: process.env.PATH, PORT: String(port), RUNS_API_TOKEN: 'sample-token' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    api.stdout?.on('data', (d: Buffer) => (log += d.toString()));
    url = `http://127.0.0.1:${port}`;
    await waitFor(
      () =>
        fetch(`${url}/healthz`).then(
          (r) => r.ok,
          () => false,
        ),
      { timeoutMs: 10_000 },
    );
  });
  afterAll(() => {
    api?.kill('SIGTERM');
  });

  const post = async (key: string, token = 'sample-token') => {
    const res = await fetch(`${url}/v1/runs`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${token}`,
        'x-tenant-id': 'demo',
      },
      body: JSON.stringify({ workflow_ref: 'onboarding@v3', input: {}, goal_id: null, dispatch_key: key }),
    });
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      body: (await res.json()) as Record<string, unknown>,
    };
  };

  it('creates a run once (201), then answers 409 with the same run id, as admission dedup does', async () => {
    const first = await post('k-welcome');
    expect(first).toMatchObject({ status: 201, body: { admission: 'created', run_id: expect.any(String) } });
    expect(await post('k-welcome')).toMatchObject({
      status: 409,
      body: { admission: 'existing', run_id: first.body.run_id },
    });
    expect(log).toMatch(/tenant=demo dispatch_key=k-welcome -> 201 created run/);
  });

  it('fails a "flaky" key once with 503 and Retry-After, refuses a "refused" key with 422, checks the token', async () => {
    expect(await post('k-flaky')).toMatchObject({ status: 503, retryAfter: '1' });
    expect(await post('k-flaky')).toMatchObject({ status: 201 });
    expect(await post('k-refused')).toMatchObject({ status: 422 });
    expect(await post('k-refused')).toMatchObject({ status: 422 });
    expect(await post('k-other', 'wrong')).toMatchObject({ status: 401 });
  });
});
