/* eslint-disable max-lines -- docker-compose.yml checked service by service against the contract */
/**
 * The container setup (Dockerfile, docker-compose.yml, Prometheus config and alerts) must agree with
 * the external contract (contract §7 ports and metric names, §8 environment) and with the local stack's
 * defaults, so that the CLI on the host works against either one unchanged. No Docker engine is needed:
 * the files are parsed and checked, not run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { loadStackConfig } from '../../devstack/config';
import { SEARCH_ATTRIBUTE_NAMES } from '../../src/contract';
import { relayHeapFlags } from '../../devstack/relayProcess';
import { SPEC_ENV } from '../support/specEnv';
import { runbookSection } from '../support/runbook';

const root = path.resolve(__dirname, '..', '..');
const read = (file: string): string => fs.readFileSync(path.join(root, file), 'utf8');
// Compose resolves YAML merge keys (`<<: *relay-env`); YAML 1.2 parsers need to be told to.
const parseYaml = (file: string): unknown => parse(read(file), { merge: true });

/** contract §7 metrics ports. */
const INGESTER_METRICS_PORT = 9464;
const WORKER_METRICS_PORT = 9465;

interface Service {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  command?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  ports?: (string | { target: number; published?: string | number; host_ip?: string })[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  restart?: string;
  healthcheck?: { test?: string | string[] };
}
interface Compose {
  version?: unknown;
  services: Record<string, Service>;
}

const compose = parseYaml('docker-compose.yml') as Compose;
const stack = loadStackConfig({});

function service(name: string): Service {
  const s = compose.services[name];
  if (!s) throw new Error(`docker-compose.yml has no service ${name}`);
  return s;
}

function envOf(s: Service): Record<string, string> {
  const env = s.environment ?? {};
  const entries: [string, string][] = Array.isArray(env)
    ? env.map((line) => {
        const i = line.indexOf('=');
        return i < 0 ? [line, ''] : [line.slice(0, i), line.slice(i + 1)];
      })
    : Object.entries(env).map(([k, v]) => [k, v === null ? '' : String(v)]);
  return Object.fromEntries(entries);
}

function commandOf(s: Service): string[] {
  if (s.command === undefined) return [];
  return Array.isArray(s.command) ? s.command.map(String) : s.command.split(/\s+/).filter(Boolean);
}

interface Published {
  hostIp: string | undefined;
  host: number;
  container: number;
}

/** Parses the short syntax `[ip:]host:container[/proto]` and the long syntax of `ports`. */
function portsOf(s: Service): Published[] {
  return (s.ports ?? []).map((p) => {
    if (typeof p !== 'string') {
      return { hostIp: p.host_ip, host: Number(p.published ?? p.target), container: Number(p.target) };
    }
    const parts = p.replace(/\/(tcp|udp)$/, '').split(':');
    const container = Number(parts.pop());
    const host = parts.length > 0 ? Number(parts.pop()) : container;
    return { hostIp: parts.length > 0 ? parts.join(':') : undefined, host, container };
  });
}

function buildOf(s: Service): { context: string; dockerfile: string } {
  if (typeof s.build === 'string') return { context: s.build, dockerfile: 'Dockerfile' };
  if (!s.build) throw new Error('service has no build section');
  return { context: s.build.context ?? '.', dockerfile: s.build.dockerfile ?? 'Dockerfile' };
}

describe('docker-compose.yml', () => {
  it('uses the Compose spec (no version key) and names exactly the six services and the two samples', () => {
    expect(compose.version).toBeUndefined();
    expect(Object.keys(compose.services).sort()).toEqual(
      ['ingester', 'kafka', 'prometheus', 'temporal', 'topics', 'worker', 'runs-api', 'producer'].sort(),
    );
  });

  it.each(['worker', 'ingester', 'topics'])('%s builds from the repository Dockerfile', (name) => {
    const { context, dockerfile } = buildOf(service(name));
    expect(path.resolve(root, context)).toBe(root);
    expect(dockerfile).toBe('Dockerfile');
    expect(fs.existsSync(path.join(root, context, dockerfile))).toBe(true);
  });

  it('runs the worker and ingest commands, and a one-shot topics apply', () => {
    expect(commandOf(service('worker'))).toEqual(['worker']);
    expect(commandOf(service('ingester'))).toEqual(['ingest']);

    const topics = service('topics');
    const cmd = commandOf(topics);
    expect(cmd.slice(0, 2)).toEqual(['topics', 'apply']);
    expect(cmd[cmd.indexOf('--tenant') + 1]).toMatch(/^[a-z0-9][a-z0-9_-]{0,62}$/);
    expect(topics.restart).toBe('no');
    expect(topics.depends_on).toMatchObject({ kafka: { condition: 'service_healthy' } });
  });

  it.each(['worker', 'ingester', 'topics'])(
    '%s sets only environment variables of contract §8 (and Node’s own NODE_OPTIONS)',
    (name) => {
      const names = Object.keys(envOf(service(name)));
      expect(names.length).toBeGreaterThan(0);
      expect(names.filter((n) => !SPEC_ENV.includes(n) && n !== 'NODE_OPTIONS')).toEqual([]);
    },
  );

  it('gives the worker and the ingester the measured V8 heap limits', () => {
    expect(envOf(service('worker')).NODE_OPTIONS).toBe(relayHeapFlags('worker'));
    expect(envOf(service('ingester')).NODE_OPTIONS).toBe(relayHeapFlags('ingest'));
  });

  it('points the relay at the compose Kafka and Temporal, with the SPEC defaults', () => {
    for (const name of ['worker', 'ingester']) {
      const env = envOf(service(name));
      expect(env.KAFKA_BROKERS).toBe(`kafka:${stack.kafkaPort}`);
      expect(env.TEMPORAL_ADDRESS).toBe(`temporal:${stack.temporalPort}`);
      expect(env.TEMPORAL_NAMESPACE ?? 'default').toBe(stack.namespace);
      expect(env.TEMPORAL_TASK_QUEUE ?? 'poimen-dispatch').toBe('poimen-dispatch');
    }
    const worker = envOf(service('worker'));
    expect(worker.RUNS_API_URL).toMatch(/^\$\{RUNS_API_URL:-https?:\/\/[^}]+\}$/);
    expect(worker.RUNS_API_TOKEN).toBe('${RUNS_API_TOKEN:-}');
  });

  it('serves metrics on the contract §7 ports, published on loopback only', () => {
    const worker = service('worker');
    const ingester = service('ingester');
    expect(envOf(worker).METRICS_PORT).toBe(String(WORKER_METRICS_PORT));
    expect(envOf(ingester).METRICS_PORT).toBe(String(INGESTER_METRICS_PORT));
    expect(portsOf(worker)).toContainEqual({
      hostIp: '127.0.0.1',
      host: WORKER_METRICS_PORT,
      container: WORKER_METRICS_PORT,
    });
    expect(portsOf(ingester)).toContainEqual({
      hostIp: '127.0.0.1',
      host: INGESTER_METRICS_PORT,
      container: INGESTER_METRICS_PORT,
    });
    for (const s of Object.values(compose.services)) {
      for (const p of portsOf(s)) expect(p.hostIp).toBe('127.0.0.1');
    }
  });

  it('checks worker readiness on /readyz', () => {
    const test = service('worker').healthcheck?.test;
    expect(Array.isArray(test) ? test.join(' ') : test).toContain('/readyz');
  });

  it('runs the same Kafka version as the local stack, reachable on the same port', () => {
    const kafka = service('kafka');
    expect(kafka.image).toBe(`apache/kafka:${stack.kafkaVersion}`);
    expect(stack.kafkaVersion).toBe('4.1.1');
    expect(portsOf(kafka).map((p) => p.host)).toContain(stack.kafkaPort);

    const env = envOf(kafka);
    expect(env.KAFKA_PROCESS_ROLES?.split(',').sort()).toEqual(['broker', 'controller']);
    // Containers use kafka:9092, the host 127.0.0.1:9092: both must be advertised.
    expect(env.KAFKA_ADVERTISED_LISTENERS).toContain(`//kafka:${stack.kafkaPort}`);
    expect(env.KAFKA_ADVERTISED_LISTENERS).toContain(`//127.0.0.1:${stack.kafkaPort}`);
    // The host port maps onto the listener advertised as 127.0.0.1.
    const external = /(\w+):\/\/127\.0\.0\.1:\d+/.exec(env.KAFKA_ADVERTISED_LISTENERS ?? '')?.[1];
    const hostMapping = portsOf(kafka).find((p) => p.host === stack.kafkaPort);
    expect(env.KAFKA_LISTENERS).toContain(`${external}://:${hostMapping?.container}`);
    expect(env.KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR).toBe('1');
    expect(env.CLUSTER_ID).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(JSON.stringify(kafka)).toContain('kafka-broker-api-versions.sh');
  });

  it('runs the Temporal dev server with its Web UI on the local stack ports', () => {
    const temporal = service('temporal');
    // Same Temporal CLI (and so the same server and UI) as the local stack.
    expect(temporal.image).toBe(`temporalio/temporal:${stack.temporalCliVersion.replace(/^v/, '')}`);
    const cmd = commandOf(temporal);
    expect(cmd.slice(0, 2)).toEqual(['server', 'start-dev']);
    expect(cmd[cmd.indexOf('--ip') + 1]).toBe('0.0.0.0');
    expect(cmd).toContain('--db-filename');
    const hostPorts = portsOf(temporal).map((p) => p.host);
    expect(hostPorts).toEqual(expect.arrayContaining([stack.temporalPort, stack.temporalUiPort]));
    expect(stack.temporalUiPort).toBe(8233);
  });

  it('registers every search attribute of contract §4 on the Temporal dev server', () => {
    const cmd = commandOf(service('temporal'));
    const registered = cmd.flatMap((arg, i) => (arg === '--search-attribute' ? [cmd[i + 1]] : []));
    expect(registered.sort()).toEqual(SEARCH_ATTRIBUTE_NAMES.map((n) => `${n}=Keyword`).sort());
  });

  it('mounts the Prometheus config and alert rules read-only', () => {
    const prometheus = service('prometheus') as Service & { volumes?: string[] };
    expect(prometheus.image).toMatch(/^prom\/prometheus:v3\.\d+\.\d+$/);
    const volumes = prometheus.volumes ?? [];
    expect(volumes).toContain('./deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro');
    expect(volumes).toContain('./deploy/prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro');
  });
});

describe('deploy/prometheus', () => {
  interface PromConfig {
    global?: { scrape_interval?: string };
    rule_files?: string[];
    scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
  }
  interface Rules {
    groups: {
      name: string;
      rules: {
        alert: string;
        expr: string;
        for?: string;
        labels?: Record<string, string>;
        annotations?: Record<string, string>;
      }[];
    }[];
  }

  it('scrapes the ingester and the worker on their metrics ports', () => {
    const config = parseYaml('deploy/prometheus/prometheus.yml') as PromConfig;
    expect(config.global?.scrape_interval).toBe('15s');
    expect(config.rule_files).toEqual(['alerts.yml']);
    const targets = Object.fromEntries(
      config.scrape_configs.map((job) => [job.job_name, job.static_configs.flatMap((c) => c.targets)]),
    );
    expect(targets).toEqual({
      'poimen-ingester': [`ingester:${INGESTER_METRICS_PORT}`],
      'poimen-worker': [`worker:${WORKER_METRICS_PORT}`],
    });
  });

  it('defines the relay alerts on contract §7 metrics and on the scrape of each job, each with severity, summary and runbook', () => {
    const rules = parseYaml('deploy/prometheus/alerts.yml') as Rules;
    expect(rules.groups.map((g) => g.name)).toEqual(['poimen-relay']);
    const alerts = rules.groups.flatMap((g) => g.rules);
    expect(alerts.map((a) => a.alert).sort()).toEqual(
      [
        'PoimenDlqLagHigh',
        'PoimenDlqRateHigh',
        'PoimenDlqMessagesOld',
        'PoimenInboxLagGrowing',
        'PoimenRunsApiErrorRate',
        'PoimenIngestPartitionUndecodable',
        'PoimenIngestPartitionsPaused',
        'PoimenRunsApiCircuitOpen',
        'PoimenIngesterAbsent',
        'PoimenWorkerAbsent',
      ].sort(),
    );
    // The absent alerts read Prometheus's own `up` of the jobs prometheus.yml scrapes.
    const jobs = (
      parseYaml('deploy/prometheus/prometheus.yml') as { scrape_configs: { job_name: string }[] }
    ).scrape_configs.map((c) => c.job_name);
    expect(jobs).toEqual(expect.arrayContaining(['poimen-ingester', 'poimen-worker']));
    const metricOf: Record<string, string> = {
      PoimenDlqLagHigh: 'dlq_consumer_lag',
      PoimenDlqRateHigh: 'dlq_messages_sent_total',
      PoimenDlqMessagesOld: 'dlq_oldest_message_age_seconds',
      PoimenInboxLagGrowing: 'poimen_inbox_lag',
      PoimenRunsApiErrorRate: 'poimen_runs_api_requests_total',
      PoimenIngestPartitionUndecodable: 'poimen_ingest_undecodable_partitions',
      PoimenIngestPartitionsPaused: 'poimen_ingest_paused_partitions',
      PoimenRunsApiCircuitOpen: 'poimen_runs_api_circuit_state',
      PoimenIngesterAbsent: 'up{job="poimen-ingester"}',
      PoimenWorkerAbsent: 'up{job="poimen-worker"}',
    };
    for (const a of alerts) {
      expect(a.expr).toContain(metricOf[a.alert]);
      expect(['info', 'warning', 'critical']).toContain(a.labels?.severity);
      expect(a.annotations?.summary).toBeTruthy();
      expect(a.annotations?.description).toBeTruthy();
      // Absolute, from the one base (package.json homepage): Alertmanager and Grafana cannot follow a relative link.
      expect({ alert: a.alert, section: runbookSection(a.annotations?.runbook_url) }).toEqual({
        alert: a.alert,
        section: expect.stringMatching(/^[a-z0-9-]+$/),
      });
      if (a.for !== undefined) expect(a.for).toMatch(/^\d+[smhd]$/);
    }
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const instructions = dockerfile
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const froms = instructions.filter((l) => /^FROM\s/i.test(l));

  it('is multi-stage on a glibc (Debian) Node 24 LTS base', () => {
    expect(froms.length).toBeGreaterThanOrEqual(2);
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:24-bookworm-slim$/m);
    expect(froms.every((f) => /^FROM \$\{NODE_IMAGE\} AS \w+$/.test(f))).toBe(true);
    // Hosts may still run the CLI on an older Node (engines.node: test/unit/nodeEngines.test.ts); developers get
    // 24 from .nvmrc.
    expect(read('.nvmrc').trim()).toBe('24');
    // @temporalio/core-bridge ships glibc binaries only: no musl (alpine) stage.
    expect(dockerfile).not.toMatch(/^(FROM|ARG)\s+\S*alpine/im);
    expect(instructions.some((l) => /COPY\s+--from=build\b/.test(l))).toBe(true);
  });

  it('runs as a non-root user with the relay CLI as entrypoint', () => {
    const users = instructions.filter((l) => /^USER\s/i.test(l));
    const last = users[users.length - 1]?.split(/\s+/)[1];
    expect(last).toBeDefined();
    expect(['root', '0', '0:0']).not.toContain(last);
    // The USER must apply to the final stage.
    expect(instructions.lastIndexOf(users[users.length - 1] ?? '')).toBeGreaterThan(
      instructions.lastIndexOf(froms[froms.length - 1] ?? ''),
    );
    expect(instructions).toContain('ENTRYPOINT ["node", "bin/poimen-relay.js"]');
    expect(instructions).toContain('CMD ["worker"]');
    expect(instructions).toContain('STOPSIGNAL SIGTERM');
  });
});
