/**
 * The two ways an operator declares the topics without `poimen-relay topics apply` on a workstation, run against
 * the real broker: deploy/scripts/create-topics.sh with Kafka's own kafka-topics (the stack's cached tools jars),
 * whose topics must come out as `topics apply` makes them; and the Kubernetes topics Job, its container command
 * taken from deploy/k8s/topics-job.yaml as written.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Admin, ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import { parseAllDocuments } from 'yaml';
import { topics } from '../src/contract';
import { type CliResult, REPO_ROOT, cliEnv, runCli } from './support/cli';
import { KAFKA_TOOLS_PROVISION_TIMEOUT_MS, type KafkaTools, kafkaTools } from './support/kafkaTools';
import { uniqueName, uniqueTenant } from './support/names';
import { testServices } from './support/testEnv';

jest.setTimeout(300_000);

const SCRIPT = path.join(REPO_ROOT, 'deploy', 'scripts', 'create-topics.sh');
/** kafkajs's configSource of a value set on the topic itself, not inherited from the broker. */
const TOPIC_CONFIG = 1;

let tools: KafkaTools;
let admin: Admin;
let work: string;
const made: string[] = [];

beforeAll(async () => {
  tools = await kafkaTools();
  admin = new Kafka({ brokers: testServices().kafkaBrokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
}, KAFKA_TOOLS_PROVISION_TIMEOUT_MS);

afterAll(async () => {
  await admin?.disconnect();
  if (tools) fs.rmSync(tools.dir, { recursive: true, force: true });
});

beforeEach(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-topics-script-'));
});

afterEach(async () => {
  fs.rmSync(work, { recursive: true, force: true });
  const present = new Set(await admin.listTopics());
  const mine = made.splice(0).filter((t) => present.has(t));
  if (mine.length > 0) await admin.deleteTopics({ topics: mine });
});

interface Container {
  name: string;
  command?: string[];
  args: string[];
  envFrom: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  env: { name: string; value: string }[];
  volumeMounts: { name: string; mountPath: string }[];
}

interface K8sObject {
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  spec?: {
    template: {
      spec: { containers: Container[]; volumes: { name: string; configMap?: { name: string } }[] };
    };
  };
}

const tenantTopics = (t: string) => [topics.dispatch(t), topics.events(t), topics.dlq(t)];

interface Made {
  partitions: number;
  replicationFactor: number;
  /** Every config set on the topic itself: one the relay does not set would show here too. */
  overrides: Record<string, string>;
}

async function described(names: string[]): Promise<Made[]> {
  const meta = await admin.fetchTopicMetadata({ topics: names });
  const configs = await admin.describeConfigs({
    includeSynonyms: false,
    resources: names.map((name) => ({ type: ConfigResourceTypes.TOPIC, name })),
  });
  return names.map((name) => {
    const partitions = meta.topics.find((t) => t.name === name)?.partitions ?? [];
    const entries = configs.resources.find((r) => r.resourceName === name)?.configEntries ?? [];
    return {
      partitions: partitions.length,
      replicationFactor: partitions[0]?.replicas.length ?? 0,
      overrides: Object.fromEntries(
        entries
          .filter((e) => (e as { configSource?: number }).configSource === TOPIC_CONFIG)
          .map((e) => [e.configName, e.configValue as string]),
      ),
    };
  });
}

function script(args: string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'bash',
      [SCRIPT, '--bootstrap-server', testServices().kafkaBrokers.join(','), ...args],
      {
        env: { PATH: process.env.PATH, HOME: process.env.HOME, ...tools.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function apply(args: string[]): Promise<{ topic: string; action: string; differences: string[] }[]> {
  const res = await runCli(['topics', 'apply', ...args, '--json'], cliEnv(), 120_000);
  if (res.code !== 0) throw new Error(`topics apply: exit ${res.code}: ${res.stderr}`);
  return JSON.parse(res.stdout) as { topic: string; action: string; differences: string[] }[];
}

/** deploy/topics.yaml as it is, comments and all, with fresh names and the one broker's replication factor. */
function topicsFile(text: string, tenants: [string, string], suffix: string): string {
  const changed = text
    .replace(/^tenants: \[acme, globex\]$/m, `tenants: [${tenants.join(', ')}]`)
    .replace(/^replicationFactor: 3$/m, 'replicationFactor: 1')
    .replace(/- name: (poimen-memory(-metric)?-dlq)$/gm, `- name: $1-${suffix}`);
  expect(changed.match(new RegExp(`${suffix}|${tenants[0]}|replicationFactor: 1`, 'g'))).toHaveLength(4);
  return changed;
}

describe('deploy/scripts/create-topics.sh', () => {
  test("creates a tenant's three topics exactly as `topics apply` does; a second run creates nothing and changes nothing", async () => {
    const [byScript, byRelay] = [uniqueTenant(), uniqueTenant()];
    made.push(...tenantTopics(byScript), ...tenantTopics(byRelay));
    // No --replication-factor: the script counts the brokers, as the relay does.
    const first = await script(['--partitions', '2', byScript]);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout.trim().split('\n')).toEqual(tenantTopics(byScript).map((t) => `created   ${t}`));
    expect((await apply(['--tenant', byRelay, '--partitions', '2'])).map((r) => r.action)).toEqual([
      'created',
      'created',
      'created',
    ]);

    const scripted = await described(tenantTopics(byScript));
    expect(scripted).toEqual(await described(tenantTopics(byRelay)));
    expect(scripted[2]?.overrides).toMatchObject({
      'retention.ms': '1209600000',
      'max.message.bytes': '8388608',
    });

    const again = await script(['--partitions', '2', byScript]);
    expect(again.code).toBe(0);
    expect(again.stdout.trim().split('\n')).toEqual(
      tenantTopics(byScript).map((t) => `exists    ${t} (left as it is)`),
    );
    expect(await described(tenantTopics(byScript))).toEqual(scripted);
    // The relay's own comparison finds nothing to report on the script's topics.
    expect(await apply(['--tenant', byScript, '--partitions', '2'])).toEqual(
      tenantTopics(byScript).map((topic) =>
        expect.objectContaining({ topic, action: 'unchanged', differences: [] }),
      ),
    );
  });

  test('reads deploy/topics.yaml: its tenants and extra topics come out as `topics apply --file` makes them', async () => {
    const text = fs.readFileSync(path.join(REPO_ROOT, 'deploy', 'topics.yaml'), 'utf8');
    const [s, r] = [uniqueName('s').slice(0, 10), uniqueName('r').slice(0, 10)];
    const scriptTenants: [string, string] = [uniqueTenant(), uniqueTenant()];
    const relayTenants: [string, string] = [uniqueTenant(), uniqueTenant()];
    const names = (tenants: string[], suffix: string) => [
      ...tenants.flatMap(tenantTopics),
      `poimen-memory-dlq-${suffix}`,
      `poimen-memory-metric-dlq-${suffix}`,
    ];
    made.push(...names(scriptTenants, s), ...names(relayTenants, r));
    const scriptFile = path.join(work, 'script.yaml');
    const relayFile = path.join(work, 'relay.yaml');
    fs.writeFileSync(scriptFile, topicsFile(text, scriptTenants, s));
    fs.writeFileSync(relayFile, topicsFile(text, relayTenants, r));

    const res = await script(['--file', scriptFile]);
    expect(res.code).toBe(0);
    expect(res.stdout.trim().split('\n')).toEqual(names(scriptTenants, s).map((t) => `created   ${t}`));
    await apply(['--file', relayFile]);
    const scripted = await described(names(scriptTenants, s));
    expect(scripted).toEqual(await described(names(relayTenants, r)));
    expect(scripted.map((d) => d.partitions)).toEqual([3, 3, 3, 3, 3, 3, 3, 1]);
    expect((await apply(['--file', scriptFile])).map((x) => x.action)).toEqual(Array(8).fill('unchanged'));
  });
});

describe('deploy/k8s/topics-job.yaml', () => {
  test("the Job's container command, as written, declares the ConfigMap's topics", async () => {
    const docs = (file: string) =>
      parseAllDocuments(fs.readFileSync(path.join(REPO_ROOT, file), 'utf8')).map(
        (d) => d.toJS() as K8sObject,
      );
    const manifest = docs('deploy/k8s/topics-job.yaml');
    const pod = manifest.find((d) => d.kind === 'Job')?.spec?.template.spec;
    const container = pod?.containers.find((c) => c.name === 'topics');
    if (!pod || !container) throw new Error('topics-job.yaml has no Job with a container named topics');

    // The image runs `ENTRYPOINT [...]` from WORKDIR /app, which holds the repository's bin/ and dist/.
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(
      fs.readFileSync(path.join(REPO_ROOT, 'Dockerfile'), 'utf8'),
    );
    const command = container.command ?? (JSON.parse(entrypoint?.[1] ?? '[]') as string[]);
    expect(command[0]).toBe('node');

    // The ConfigMap volume, with fresh tenants and extra topics and the one broker's replication factor, where
    // the container finds it.
    const [a, b] = [uniqueTenant(), uniqueTenant()];
    const suffix = uniqueName('j').slice(0, 10);
    const expected = [
      ...[a, b].flatMap(tenantTopics),
      `poimen-memory-dlq-${suffix}`,
      `poimen-memory-metric-dlq-${suffix}`,
    ];
    made.push(...expected);
    const mounts = container.volumeMounts.map((m): [string, string] => {
      const volume = pod.volumes.find((v) => v.name === m.name);
      const local = path.join(work, m.name);
      fs.mkdirSync(local);
      const source = volume?.configMap
        ? manifest.find((d) => d.kind === 'ConfigMap' && d.metadata.name === volume.configMap?.name)
        : undefined;
      for (const [key, value] of Object.entries<string>(source?.data ?? {}))
        fs.writeFileSync(path.join(local, key), topicsFile(value, [a, b], suffix));
      return [m.mountPath, local];
    });
    const args = container.args.map((arg) => {
      const mount = mounts.find(([at]) => arg.startsWith(`${at}/`));
      return mount ? mount[1] + arg.slice(mount[0].length) : arg;
    });

    // The pod's environment: the ConfigMap and Secret it names (the example Secret), then its own env; only the
    // brokers point here.
    const data = (file: string, kind: string, name: string) => {
      const d = docs(file).find((x) => x.kind === kind && x.metadata.name === name);
      return d?.data ?? d?.stringData ?? {};
    };
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME };
    for (const from of container.envFrom) {
      if (from.configMapRef)
        Object.assign(env, data('deploy/k8s/configmap.yaml', 'ConfigMap', from.configMapRef.name));
      if (from.secretRef) {
        // Filled in, as an operator must: the relay refuses to start on the example's REPLACE_ME placeholders.
        const secret = data('deploy/k8s/secret.example.yaml', 'Secret', from.secretRef.name);
        for (const [k, v] of Object.entries(secret)) env[k] = v === 'REPLACE_ME' ? uniqueName('secret') : v;
      }
    }
    for (const e of container.env) env[e.name] = e.value;
    env.KAFKA_BROKERS = testServices().kafkaBrokers.join(',');

    const res = await new Promise<CliResult>((resolve, reject) => {
      const child = spawn(process.execPath, [...command.slice(1), ...args], { cwd: REPO_ROOT, env });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    if (res.code !== 0) throw new Error(`the Job's command exited ${res.code}: ${res.stderr}`);
    expect(res.stdout.trim().split('\n')).toEqual(expected.map((t) => `${'created'.padEnd(9)} ${t}`));

    const dlq = { 'retention.ms': '1209600000', 'max.message.bytes': '8388608' };
    const memory = { 'retention.ms': '1209600000' };
    const tenant = [
      { partitions: 3, replicationFactor: 1, overrides: {} },
      { partitions: 3, replicationFactor: 1, overrides: {} },
      { partitions: 3, replicationFactor: 1, overrides: dlq },
    ];
    expect(await described(expected)).toEqual([
      ...tenant,
      ...tenant,
      { partitions: 3, replicationFactor: 1, overrides: memory },
      { partitions: 1, replicationFactor: 1, overrides: memory },
    ]);
  });
});
