/* eslint-disable max-lines -- the manifests checked against the contract variable by variable */
/**
 * The Kubernetes manifests (deploy/k8s), the declarative topics file (deploy/topics.yaml) and the Grafana
 * dashboard (deploy/grafana) must agree with the external contract: contract §7 metric names and ports, contract §8
 * environment, the CLI commands, and the operational rules of docs/configuration.md. No cluster is needed:
 * the files are parsed and checked, not applied.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { loadRelayConfig } from '../../src/config';
import { relayHeapFlags } from '../../devstack/relayProcess';
import { ConfigError } from '../../src/errors';
import { createMetrics } from '../../src/metrics';
import { SPEC_ENV } from '../support/specEnv';

const root = path.resolve(__dirname, '..', '..');
const read = (file: string): string => fs.readFileSync(path.join(root, file), 'utf8');
const K8S_DIR = 'deploy/k8s';
const NAMESPACE = 'poimen';

/** The credentials: only ever in the Secret. */
const SECRET_ENV = [
  'RUNS_API_TOKEN',
  'KAFKA_SASL_USERNAME',
  'KAFKA_SASL_PASSWORD',
  'KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET',
  'TEMPORAL_API_KEY',
];

/** contract §7 metric names. */
const SPEC_METRICS = [
  'poimen_inbox_lag',
  'poimen_dispatch_records_total',
  'dlq_messages_sent_total',
  'dlq_consumer_lag',
  'dlq_oldest_message_age_seconds',
  'poimen_runs_api_requests_total',
  'poimen_runs_api_request_duration_seconds',
  'poimen_dispatch_latency_seconds',
  'poimen_runs_api_circuit_state',
];

/** Worker metrics beyond contract §7 that the dashboard also shows (docs/contract.md §7 names them). */
const BEYOND_CONTRACT_METRICS = [
  'poimen_runs_api_breaker_waiting',
  'poimen_ingest_tenant_open_dispatches',
  'poimen_ingest_open_budget',
];

/** The POIMEN_ tuning knobs documented in the "Tuning knobs" table of docs/configuration.md. */
function tuningVariables(): string[] {
  const doc = read('docs/configuration.md');
  const start = doc.indexOf('## Tuning knobs');
  expect(start).toBeGreaterThanOrEqual(0);
  const rest = doc.slice(start + 1);
  const next = rest.indexOf('\n## ');
  const section = next < 0 ? rest : rest.slice(0, next);
  const rows = section.split('\n').filter((l) => l.startsWith('|'));
  return [
    ...new Set(rows.flatMap((l) => [...l.matchAll(/`(POIMEN_[A-Z0-9_]+)`/g)].map((m) => m[1] as string))),
  ];
}

// --- Kubernetes object shapes (only the fields checked here) ------------------------------------------------

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string };
    configMapKeyRef?: { name: string; key: string };
  };
}
interface Probe {
  httpGet?: { path?: string; port?: string | number };
}
interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name?: string; containerPort: number }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
  };
  volumeMounts?: { name: string; mountPath: string }[];
}
interface SpreadConstraint {
  topologyKey: string;
  maxSkew: number;
  whenUnsatisfiable: string;
  labelSelector?: { matchLabels?: Record<string, string> };
}
interface PodSpec {
  containers: Container[];
  topologySpreadConstraints?: SpreadConstraint[];
  restartPolicy?: string;
  terminationGracePeriodSeconds?: number;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  volumes?: { name: string; configMap?: { name: string }; emptyDir?: object }[];
}
interface PodTemplate {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: PodSpec;
}
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  data?: Record<string, unknown>;
  stringData?: Record<string, unknown>;
  type?: string;
  spec?: {
    replicas?: number;
    selector?: { matchLabels?: Record<string, string> };
    template?: PodTemplate;
    backoffLimit?: number;
    ttlSecondsAfterFinished?: number;
  };
}
interface Manifest {
  file: string;
  object: K8sObject;
}

/** Examples (`*.example.yaml`) are documentation: never applied, so not in the kustomization. */
const isExample = (f: string): boolean => f.endsWith('.example.yaml');

function loadManifests(dir: string, files: string[]): Manifest[] {
  return files.flatMap((file) =>
    parseAllDocuments(fs.readFileSync(path.join(root, dir, file), 'utf8')).flatMap((doc) => {
      if (doc.errors.length > 0) throw new Error(`${dir}/${file}: ${doc.errors[0]?.message}`);
      const object = doc.toJS() as K8sObject | null;
      return object ? [{ file, object }] : [];
    }),
  );
}

const k8sFiles = fs.readdirSync(path.join(root, K8S_DIR)).filter((f) => /\.ya?ml$/.test(f));
const manifests = loadManifests(
  K8S_DIR,
  k8sFiles.filter((f) => f !== 'kustomization.yaml' && !isExample(f)).sort(),
);
const exampleSecret = loadManifests(K8S_DIR, ['secret.example.yaml'])[0]?.object as K8sObject;
const objects = manifests.map((m) => m.object);
const ofKind = (kind: string): K8sObject[] => objects.filter((o) => o.kind === kind);

function named(kind: string, name: string): K8sObject {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`${K8S_DIR} has no ${kind} ${name}`);
  return o;
}

function podSpec(o: K8sObject): PodSpec {
  const spec = o.spec?.template?.spec;
  if (!spec) throw new Error(`${o.kind} ${o.metadata.name} has no pod template`);
  return spec;
}

function onlyContainer(o: K8sObject): Container {
  const containers = podSpec(o).containers;
  expect(containers).toHaveLength(1);
  return containers[0] as Container;
}

function deploymentRunning(command: string): K8sObject {
  const found = ofKind('Deployment').filter(
    (d) => JSON.stringify(onlyContainer(d).args) === JSON.stringify([command]),
  );
  expect(found).toHaveLength(1);
  return found[0] as K8sObject;
}

function envValue(c: Container, name: string): string | undefined {
  return c.env?.find((e) => e.name === name)?.value;
}

/** Memory quantity in bytes (Ki, Mi, Gi, or plain bytes). */
function bytes(q: string): number {
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(q);
  if (!m) throw new Error(`unexpected memory quantity ${q}`);
  const unit = { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 }[m[2] ?? ''] ?? 1;
  return Number(m[1]) * unit;
}

const configMap = named('ConfigMap', 'poimen-relay-config');
const configData = (configMap.data ?? {}) as Record<string, unknown>;

describe('deploy/k8s', () => {
  it('parses, puts everything in the poimen namespace and lists every file in kustomization.yaml', () => {
    expect(objects.length).toBeGreaterThan(0);
    for (const o of objects) {
      expect(o.apiVersion).toBeTruthy();
      if (o.kind === 'Namespace') expect(o.metadata.name).toBe(NAMESPACE);
      else
        expect({ kind: o.kind, name: o.metadata.name, ns: o.metadata.namespace }).toMatchObject({
          ns: NAMESPACE,
        });
    }
    const kustomization = parse(read(`${K8S_DIR}/kustomization.yaml`)) as {
      namespace?: string;
      resources?: string[];
    };
    expect(kustomization.namespace).toBe(NAMESPACE);
    const files = [...new Set(manifests.map((m) => m.file))].sort();
    expect([...(kustomization.resources ?? [])].sort()).toEqual(files);
    for (const r of ['configmap.yaml', 'ingester-deployment.yaml', 'worker-deployment.yaml']) {
      expect(files).toContain(r);
    }
    expect(files).toEqual(expect.arrayContaining(['topics-job.yaml', 'temporal-setup-job.yaml']));
  });

  it('runs the ingester and the worker as two separate Deployments', () => {
    const deployments = ofKind('Deployment');
    expect(deployments).toHaveLength(2);
    const ingester = deploymentRunning('ingest');
    const worker = deploymentRunning('worker');
    expect(ingester.metadata.name).not.toBe(worker.metadata.name);
    // Distinct selectors: neither Deployment adopts the other's pods.
    expect(ingester.spec?.selector?.matchLabels).not.toEqual(worker.spec?.selector?.matchLabels);
    for (const d of [ingester, worker]) {
      expect(d.spec?.template?.metadata?.labels).toMatchObject(
        d.spec?.selector?.matchLabels ?? { missing: true },
      );
      expect(onlyContainer(d).image).toMatch(/^poimen-relay:/);
      expect(onlyContainer(d).command).toBeUndefined(); // the image's ENTRYPOINT: node bin/poimen-relay.js
    }
  });

  it.each([
    ['ingest', 9464],
    ['worker', 9465],
  ])(
    '%s serves metrics, /healthz and /readyz on its contract §7 port, scraped by Prometheus',
    (command, port) => {
      const d = deploymentRunning(command);
      const c = onlyContainer(d);
      expect(envValue(c, 'METRICS_PORT')).toBe(String(port));
      expect(c.ports).toContainEqual(expect.objectContaining({ name: 'metrics', containerPort: port }));
      const targetsMetricsPort = (probe: Probe | undefined): boolean =>
        probe?.httpGet?.port === 'metrics' || probe?.httpGet?.port === port;
      expect(c.livenessProbe?.httpGet?.path).toBe('/healthz');
      expect(c.readinessProbe?.httpGet?.path).toBe('/readyz');
      expect(targetsMetricsPort(c.livenessProbe)).toBe(true);
      expect(targetsMetricsPort(c.readinessProbe)).toBe(true);
      if (c.startupProbe) expect(targetsMetricsPort(c.startupProbe)).toBe(true);
      expect(d.spec?.template?.metadata?.annotations).toMatchObject({
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': String(port),
        'prometheus.io/path': '/metrics',
      });
    },
  );

  it.each(['ingest', 'worker'])(
    '%s sets resources and drains within terminationGracePeriodSeconds',
    (command) => {
      const d = deploymentRunning(command);
      const c = onlyContainer(d);
      expect(c.resources?.requests?.cpu).toBeTruthy();
      const request = c.resources?.requests?.memory;
      const limit = c.resources?.limits?.memory;
      expect(request).toBeTruthy();
      expect(limit).toBeTruthy();
      expect(bytes(limit as string)).toBeGreaterThanOrEqual(bytes(request as string));
      const grace = podSpec(d).terminationGracePeriodSeconds ?? 30;
      expect(grace).toBeGreaterThanOrEqual(30);
      if (command === 'worker') {
        // SIGTERM gives running activities POIMEN_WORKER_SHUTDOWN_GRACE_MS, then closes the producer and connection.
        const workerGraceMs = Number(configData.POIMEN_WORKER_SHUTDOWN_GRACE_MS ?? 30000);
        expect(grace * 1000).toBeGreaterThan(workerGraceMs);
      }
    },
  );

  it.each(['ingest', 'worker'])(
    'spreads %s replicas over nodes (hard) and zones (soft), counting only its own pods',
    (command) => {
      const d = deploymentRunning(command);
      const spread = podSpec(d).topologySpreadConstraints ?? [];
      const byKey = Object.fromEntries(spread.map((c) => [c.topologyKey, c]));
      expect(byKey['kubernetes.io/hostname']).toMatchObject({
        maxSkew: 1,
        whenUnsatisfiable: 'DoNotSchedule',
      });
      expect(byKey['topology.kubernetes.io/zone']).toMatchObject({
        maxSkew: 1,
        whenUnsatisfiable: 'ScheduleAnyway',
      });
      for (const c of spread) expect(c.labelSelector?.matchLabels).toEqual(d.spec?.selector?.matchLabels);
    },
  );

  it('runs every relay container as non-root, read-only, without privilege escalation', () => {
    const workloads = [...ofKind('Deployment'), ...ofKind('Job')];
    expect(workloads.length).toBeGreaterThanOrEqual(4);
    for (const w of workloads) {
      const pod = podSpec(w);
      for (const c of pod.containers) {
        const where = `${w.kind} ${w.metadata.name}/${c.name}`;
        const nonRoot = c.securityContext?.runAsNonRoot ?? pod.securityContext?.runAsNonRoot;
        // The image's USER is a name (`node`): the kubelet can only verify runAsNonRoot with a numeric uid.
        const uid = c.securityContext?.runAsUser ?? pod.securityContext?.runAsUser;
        expect({ where, nonRoot, uidIsNonRoot: typeof uid === 'number' && uid > 0 }).toEqual({
          where,
          nonRoot: true,
          uidIsNonRoot: true,
        });
        expect({ where, ...c.securityContext }).toMatchObject({
          where,
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
        });
      }
    }
  });

  it('feeds every relay container from the ConfigMap and the Secret', () => {
    const secret = exampleSecret;
    for (const w of [...ofKind('Deployment'), ...ofKind('Job')]) {
      const c = onlyContainer(w);
      expect(c.envFrom).toEqual(
        expect.arrayContaining([
          { configMapRef: { name: configMap.metadata.name } },
          { secretRef: { name: secret.metadata.name } },
        ]),
      );
    }
  });

  it('applies no Secret: the example holds placeholders, which the relay refuses at start', () => {
    // `kubectl apply -k` must never create the Secret with a placeholder token.
    expect(ofKind('Secret')).toEqual([]);
    expect(exampleSecret.kind).toBe('Secret');
    expect(exampleSecret.metadata.name).toBe('poimen-relay-secrets');
    const values = exampleSecret.stringData as Record<string, string>;
    // Applied by hand anyway, it stops the relay with one line naming the variable.
    let caught: unknown;
    try {
      loadRelayConfig('worker', values);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).variable).toBe('RUNS_API_TOKEN');
  });

  it('keeps RUNS_API_TOKEN (and every other credential) in the Secret only', () => {
    const secret = exampleSecret;
    expect(secret.type).toBe('Opaque');
    const keys = Object.keys({ ...(secret.stringData ?? {}), ...(secret.data ?? {}) });
    expect(keys.sort()).toEqual([...SECRET_ENV].sort());

    for (const cm of ofKind('ConfigMap')) {
      const text = JSON.stringify(cm.data ?? {});
      for (const name of SECRET_ENV)
        expect({ configMap: cm.metadata.name, has: text.includes(name) }).toMatchObject({ has: false });
      for (const key of Object.keys(cm.data ?? {})) expect(key).not.toMatch(/TOKEN|PASSWORD|API_KEY|SECRET/);
    }
    // No container spells a credential out: at most a secretKeyRef.
    for (const w of [...ofKind('Deployment'), ...ofKind('Job')]) {
      for (const c of podSpec(w).containers) {
        for (const e of c.env ?? []) {
          if (SECRET_ENV.includes(e.name)) {
            expect(e.value).toBeUndefined();
            expect(e.valueFrom?.secretKeyRef).toBeDefined();
          }
        }
      }
    }
  });

  it('gives the worker and the ingester the measured V8 heap limits, inside their memory limits', () => {
    for (const role of ['worker', 'ingest'] as const) {
      const c = onlyContainer(deploymentRunning(role));
      const flags = envValue(c, 'NODE_OPTIONS');
      expect(flags).toBe(relayHeapFlags(role));
      const oldSpaceMiB = Number(/--max-old-space-size=(\d+)/.exec(flags ?? '')?.[1]);
      expect(bytes(c.resources?.limits?.memory ?? '0')).toBeGreaterThan(2 * oldSpaceMiB * 1024 ** 2);
    }
  });

  it('sets in the ConfigMap only contract §8 variables and documented POIMEN_ tuning knobs, as strings', () => {
    const tuning = tuningVariables();
    expect(tuning).toContain('POIMEN_WORKER_SHUTDOWN_GRACE_MS');
    // RETRY_MAX_DURATION_MS: contract §5's time budget, beside §8's retry variables.
    const allowed = [...SPEC_ENV, 'RETRY_MAX_DURATION_MS', ...tuning];
    const keys = Object.keys(configData);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.filter((k) => !allowed.includes(k))).toEqual([]);
    for (const [k, v] of Object.entries(configData))
      expect({ k, type: typeof v }).toEqual({ k, type: 'string' });
    for (const k of [
      'KAFKA_BROKERS',
      'KAFKA_GROUP_ID',
      'TEMPORAL_ADDRESS',
      'TEMPORAL_NAMESPACE',
      'TEMPORAL_TASK_QUEUE',
    ]) {
      expect(configData[k]).toBeTruthy();
    }
    expect(configData.RUNS_API_URL).toMatch(/^https?:\/\//);
    // Per-process values belong to the Deployments, not to the shared ConfigMap.
    expect(keys).not.toContain('METRICS_PORT');
    // So do the containers' own env entries (and Node's own NODE_OPTIONS for the heap limits).
    for (const w of [...ofKind('Deployment'), ...ofKind('Job')]) {
      for (const e of onlyContainer(w).env ?? []) expect([...allowed, 'NODE_OPTIONS']).toContain(e.name);
    }
  });

  it('declares the topics with a one-shot `topics apply --file` Job reading the topics ConfigMap', () => {
    const job = named('Job', 'poimen-relay-topics');
    const c = onlyContainer(job);
    const args = c.args ?? [];
    expect(args.slice(0, 2)).toEqual(['topics', 'apply']);
    const file = args[args.indexOf('--file') + 1];
    expect(file).toBe('/etc/poimen/topics.yaml');
    expect(job.spec?.backoffLimit).toEqual(expect.any(Number));
    expect(job.spec?.ttlSecondsAfterFinished).toEqual(expect.any(Number));
    expect(['Never', 'OnFailure']).toContain(podSpec(job).restartPolicy);

    // The file is mounted from ConfigMap poimen-relay-topics and is the same as deploy/topics.yaml.
    const mount = c.volumeMounts?.find((m) => m.mountPath === path.posix.dirname(file as string));
    expect(mount).toBeDefined();
    const volume = podSpec(job).volumes?.find((v) => v.name === mount?.name);
    expect(volume?.configMap?.name).toBe('poimen-relay-topics');
    const topicsConfigMap = named('ConfigMap', 'poimen-relay-topics');
    const embedded = topicsConfigMap.data?.[path.posix.basename(file as string)];
    expect(typeof embedded).toBe('string');
    expect(parse(embedded as string)).toEqual(parse(read('deploy/topics.yaml')));
  });

  it('registers the search attributes with a one-shot `temporal setup` Job', () => {
    const jobs = ofKind('Job').filter(
      (j) => JSON.stringify(onlyContainer(j).args) === '["temporal","setup"]',
    );
    expect(jobs).toHaveLength(1);
    const job = jobs[0] as K8sObject;
    expect(job.spec?.backoffLimit).toEqual(expect.any(Number));
    expect(job.spec?.ttlSecondsAfterFinished).toEqual(expect.any(Number));
  });
});

describe('deploy/topics.yaml', () => {
  interface TopicsFile {
    partitions: number;
    replicationFactor: number;
    tenants: string[];
    extraTopics: {
      name: string;
      partitions?: number;
      replicationFactor?: number;
      config?: Record<string, string>;
    }[];
  }
  const topics = parse(read('deploy/topics.yaml')) as TopicsFile;

  it('has the shape partitions / replicationFactor / tenants / extraTopics', () => {
    expect(Object.keys(topics).sort()).toEqual(['extraTopics', 'partitions', 'replicationFactor', 'tenants']);
    expect(Number.isInteger(topics.partitions) && topics.partitions >= 1).toBe(true);
    expect(Number.isInteger(topics.replicationFactor) && topics.replicationFactor >= 1).toBe(true);
    expect(topics.tenants.length).toBeGreaterThan(0);
    for (const t of topics.tenants) expect(t).toMatch(/^[a-z0-9][a-z0-9_-]{0,62}$/);
    for (const t of topics.extraTopics) {
      expect(
        Object.keys(t).every((k) => ['name', 'partitions', 'replicationFactor', 'config'].includes(k)),
      ).toBe(true);
      expect(t.name).toMatch(/^[A-Za-z0-9._-]{1,249}$/);
      for (const v of Object.values(t.config ?? {})) expect(typeof v).toBe('string');
    }
  });

  it.each(['poimen-memory-dlq', 'poimen-memory-metric-dlq'])('declares %s with 14-day retention', (name) => {
    const topic = topics.extraTopics.find((t) => t.name === name);
    expect(topic).toBeDefined();
    expect(topic?.config?.['retention.ms']).toBe('1209600000');
  });
});

describe('deploy/grafana/poimen-relay-dashboard.json', () => {
  interface Target {
    expr?: string;
    datasource?: { type?: string; uid?: string };
  }
  interface Panel {
    type: string;
    title: string;
    datasource?: { type?: string; uid?: string };
    targets?: Target[];
    fieldConfig?: {
      defaults?: { mappings?: { type: string; options?: Record<string, { text?: string }> }[] };
    };
  }
  const dashboard = JSON.parse(read('deploy/grafana/poimen-relay-dashboard.json')) as {
    uid?: string;
    title?: string;
    schemaVersion?: number;
    templating?: { list?: { name: string; type: string; query?: string }[] };
    panels: Panel[];
  };
  const queryPanels = dashboard.panels.filter((p) => (p.targets ?? []).length > 0);
  const exprs = queryPanels.flatMap((p) => p.targets ?? []).flatMap((t) => (t.expr ? [t.expr] : []));

  it('is a Grafana dashboard on a Prometheus data source variable', () => {
    expect(dashboard.uid).toBeTruthy();
    expect(dashboard.title).toBeTruthy();
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    const dsVar = dashboard.templating?.list?.find((v) => v.type === 'datasource');
    expect(dsVar).toMatchObject({ name: 'DS_PROMETHEUS', query: 'prometheus' });
    for (const p of queryPanels) {
      expect(p.datasource).toEqual({ type: 'prometheus', uid: '${DS_PROMETHEUS}' });
      for (const t of p.targets ?? [])
        expect(t.datasource?.uid ?? '${DS_PROMETHEUS}').toBe('${DS_PROMETHEUS}');
    }
  });

  it('queries only contract §7 metrics (and the documented worker extras), each of them', () => {
    expect(exprs.length).toBeGreaterThan(0);
    const known = [...SPEC_METRICS, ...BEYOND_CONTRACT_METRICS];
    const used = exprs.flatMap((e) => e.match(/\b(?:poimen|dlq)_[a-z0-9_]*/g) ?? []);
    const base = (m: string): string => (known.includes(m) ? m : m.replace(/_(bucket|sum|count)$/, ''));
    expect(used.filter((m) => !known.includes(base(m)))).toEqual([]);
    // Every contract §7 metric has a panel.
    expect([...new Set(used.map(base))].sort()).toEqual([...known].sort());
  });

  it('shows the requested views', () => {
    const all = exprs.join('\n');
    // A selector may follow the name (the tenant variable: test/unit/dashboard.test.ts).
    expect(all).toMatch(/max by \(topic, partition\) \(poimen_inbox_lag(\{[^}]*\})?\)/);
    expect(all).toMatch(/sum by \(outcome\) \(rate\(poimen_dispatch_records_total(\{[^}]*\})?\[/);
    expect(all).toMatch(/sum by \(topic\) \(rate\(dlq_messages_sent_total(\{[^}]*\})?\[/);
    expect(all).toMatch(/sum by \(code\) \(rate\(poimen_runs_api_requests_total\[/);
    // The breaker is per worker process: one series per instance, not a sum that hides which worker is open.
    expect(all).toContain('max by (instance) (poimen_runs_api_circuit_state)');
    expect(all).toContain('sum by (instance) (poimen_runs_api_breaker_waiting)');
    for (const histogram of ['poimen_runs_api_request_duration_seconds', 'poimen_dispatch_latency_seconds']) {
      for (const q of ['0.5', '0.99']) {
        expect(all).toContain(
          `histogram_quantile(${q}, sum by (le) (rate(${histogram}_bucket[$__rate_interval])))`,
        );
      }
    }
  });

  it('groups dead letters as dlq summary does, by labels the dead-letter counter has', () => {
    const grouped = exprs.flatMap((e) => {
      const m = /sum by \(([^)]*)\) \(increase\(dlq_messages_sent_total\b/.exec(e);
      return m ? [m[1]!.split(',').map((l) => l.trim())] : [];
    });
    expect(grouped).toEqual([['topic', 'type', 'error_class', 'http_status']]);
    const counter = createMetrics({ defaultMetrics: false }).dlqSent as unknown as { labelNames: string[] };
    expect(counter.labelNames).toEqual(expect.arrayContaining(grouped[0]!));
  });

  it('names the circuit breaker states as the metric defines them (0 closed, 1 open, 2 half-open)', () => {
    const panel = queryPanels.find((p) =>
      (p.targets ?? []).some((t) => t.expr?.includes('poimen_runs_api_circuit_state')),
    );
    expect(panel).toBeDefined();
    const names = Object.fromEntries(
      (panel!.fieldConfig?.defaults?.mappings ?? [])
        .filter((m) => m.type === 'value')
        .flatMap((m) => Object.entries(m.options ?? {}).map(([v, o]) => [v, o.text])),
    );
    expect(names).toEqual({ '0': 'closed', '1': 'open', '2': 'half-open' });
  });
});
