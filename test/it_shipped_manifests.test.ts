/**
 * The deployment artifacts run as tested: the ingester and the worker are started with exactly the arguments and
 * environment that `kustomize build deploy/k8s`, `kustomize build deploy/k8s-autoscaled` and docker-compose.yml give
 * them (heap limits included), on the real stack. Only where the traffic goes is rewritten: the Kafka, Temporal and
 * runs-API addresses, the metrics port, and this test's own consumer group, topic pattern and task queue (the shipped
 * ones would drain every other suite's topics); the Secret's placeholders are filled as an operator would.
 *
 * Each process's effective configuration, as it logs it at start, must equal the contract's defaults except where
 * the manifest says why (a `differs from the default:` comment on the key). Then the k8s base rides out a runs-API
 * outage longer than ten attempts take at a one-minute retry ceiling (~4 min): nothing is dead-lettered, and the
 * dispatch completes once the API answers again.
 */
import fs from 'node:fs';
import { topics } from '../src/contract';
import { type Setting, explainRelayConfig } from '../src/config/effective';
import { envVarsReadBy } from '../src/config/envTable';
import { type Harness, createHarness } from './support/relayHarness';
import { type RelayProcess, startRelayProcess } from './support/relay';
import {
  type ShippedProcess,
  composeProcesses,
  k8sProcesses,
  statedDifferences,
} from './support/shippedManifests';
import { readTopicToEnd } from './support/dlqTopic';
import { waitFor } from './support/wait';

jest.setTimeout(600_000);

/** The rewritten settings: where the traffic goes, and this test's own group, topics and task queue. */
const REWRITTEN = [
  'KAFKA_BROKERS',
  'TEMPORAL_ADDRESS',
  'RUNS_API_URL',
  'METRICS_PORT',
  'KAFKA_GROUP_ID',
  'DISPATCH_TOPIC_PATTERN',
  'TEMPORAL_TASK_QUEUE',
];
const TOKEN = 'manifest-test-token';
/** Set by the manifests for the runtime, not read by the relay's config: Node's own options. */
const NOT_RELAY_SETTINGS = ['NODE_OPTIONS'];
/** What a shared ConfigMap or Secret may hold: what any of the relay's processes and commands reads. */
const SHARED_READERS = new Set(
  (['ingest', 'worker', 'kafka-cli', 'temporal-cli'] as const).flatMap((r) =>
    envVarsReadBy(r).map((v) => v.name),
  ),
);

let h: Harness;
const started: RelayProcess[] = [];

beforeAll(async () => {
  h = await createHarness({ api: { token: TOKEN } });
});
afterAll(async () => {
  for (const p of started) await p.stop().catch(() => undefined);
  await h?.cleanup();
});

function shipped(): ShippedProcess[] {
  const fill = (key: string) => (key === 'RUNS_API_TOKEN' ? TOKEN : '');
  return [
    ...k8sProcesses('deploy/k8s', fill),
    ...k8sProcesses('deploy/k8s-autoscaled', fill),
    ...composeProcesses(),
  ];
}

/** The manifest's environment with the addresses rewritten, and nothing of the test's own environment. */
function localEnv(p: ShippedProcess): NodeJS.ProcessEnv {
  const rewritten: Record<string, string> = {};
  for (const name of REWRITTEN) if (name !== 'METRICS_PORT') rewritten[name] = h.env[name]!;
  return { PATH: process.env.PATH, HOME: process.env.HOME, ...p.env, ...rewritten };
}

async function start(p: ShippedProcess, label: string): Promise<RelayProcess> {
  expect(p.args).toEqual([p.role]);
  const proc = await startRelayProcess(p.role, localEnv(p), `${h.tenant}-${label}`);
  started.push(proc);
  return proc;
}

function effective(proc: RelayProcess): Setting[] {
  for (const line of fs.readFileSync(proc.logFile, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    const l = JSON.parse(line) as { msg?: string; config?: Setting[] };
    if (l.msg === 'effective configuration') return l.config!;
  }
  throw new Error(`${proc.logFile}: no effective configuration line`);
}

test('every shipped ingester and worker runs with the contract’s defaults, except where its manifest says why', async () => {
  const processes = shipped();
  // The base, the autoscaled overlay and Compose: an ingester and a worker each.
  expect(processes.map((p) => `${p.source.split(' ')[0]} ${p.role}`).sort()).toEqual([
    'deploy/k8s ingest',
    'deploy/k8s worker',
    'deploy/k8s-autoscaled ingest',
    'deploy/k8s-autoscaled worker',
    'docker-compose.yml ingest',
    'docker-compose.yml worker',
  ]);
  const problems: string[] = [];
  for (const [i, p] of processes.entries()) {
    // Started means ready (/readyz 200): the process runs with this configuration.
    const proc = await start(p, `shipped-${i}`);
    const role = p.role === 'ingest' ? 'ingester' : 'worker';
    const defaults = new Map(explainRelayConfig(role, {}).settings.map((s) => [s.name, s.value]));
    const why = statedDifferences(p.files);
    // A variable nobody reads is dead configuration (or a misspelt name): set for this process alone, it must be
    // one this process reads; from the shared ConfigMap or Secret, one some relay command reads.
    const mine = new Set(envVarsReadBy(p.role).map((v) => v.name));
    for (const name of Object.keys(p.env)) {
      if (NOT_RELAY_SETTINGS.includes(name)) continue;
      if (p.own.includes(name) ? !mine.has(name) : !SHARED_READERS.has(name))
        problems.push(
          `${p.source}: sets ${name}, not read by ${p.own.includes(name) ? `the ${role}` : 'any relay command'}`,
        );
    }
    for (const s of effective(proc)) {
      if (REWRITTEN.includes(s.name) || why.has(s.name)) continue;
      if (s.name === 'RUNS_API_TOKEN') continue; // a secret: its presence is the operator's
      if (s.value !== defaults.get(s.name))
        problems.push(
          `${p.source}: ${s.name}=${s.value} (default ${defaults.get(s.name)}), no stated reason`,
        );
    }
    await proc.stop();
  }
  expect(problems).toEqual([]);
});

test('the k8s base rides out a runs-API outage longer than ten attempts at a one-minute ceiling take: nothing dead-lettered', async () => {
  const base = shipped().filter((p) => p.source.startsWith('deploy/k8s '));
  const worker = await start(
    base.find((p) => p.role === 'worker')!,
    'outage-worker',
  );
  const ingester = await start(
    base.find((p) => p.role === 'ingest')!,
    'outage-ingest',
  );
  expect([worker.role, ingester.role]).toEqual(['worker', 'ingest']);
  h.api.always({ kind: 'status', status: 503 });
  await h.publish(h.dispatchValue('through-the-outage'));
  await waitFor(() => h.api.requestsFor('through-the-outage').length > 0, {
    timeoutMs: 60_000,
    what: 'the first call',
  });
  // Ten attempts 1 s apart, doubling to a 60 s ceiling, are spent 1+2+4+8+16+32+60+60+60 = 243 s after the first:
  // a capped policy has dead-lettered the dispatch by then. Contract §5's budget is still retrying it.
  const firstCallAtMs = h.api.requestsFor('through-the-outage')[0]!.receivedAtMs;
  await new Promise((r) => setTimeout(r, Math.max(0, firstCallAtMs + 275_000 - Date.now())));
  const calls = h.api.requestsFor('through-the-outage');
  expect(calls.every((c) => c.answer === 503)).toBe(true);
  expect(calls.length).toBeGreaterThanOrEqual(9);
  expect(await readTopicToEnd(h.kafka, topics.dlq(h.tenant))).toEqual([]);
  const run = await h.client.workflow.getHandle(h.wfId('through-the-outage')).describe();
  expect(run.status.name).toBe('RUNNING');
  h.api.always(undefined);
});
