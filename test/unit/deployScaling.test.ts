/**
 * The Kubernetes manifests as applied: the base (deploy/k8s) and the overlay with KEDA autoscaling and the
 * Prometheus-operator PodMonitor (deploy/k8s-autoscaled), rendered by kustomize and validated by kubeconform
 * against the Kubernetes schemas (test/support/kubeconform.ts builds both tools once, offline). The custom
 * resources have no schema here, so their fields are checked against the names KEDA and the operator document.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { provisionKubeconform, type Kubeconform } from '../support/kubeconform';
import { deadLetterTaskQueue, largeInputTaskQueue } from '../../src/contract/workflow';

const root = path.resolve(__dirname, '..', '..');
const read = (file: string): string => fs.readFileSync(path.join(root, file), 'utf8');

// Oldest Kubernetes with every field used GA (Job podFailurePolicy: 1.31), and the newest the schemas cover.
const KUBERNETES_VERSIONS = ['1.31.0', '1.37.0'];
const CUSTOM_KINDS = ['ScaledObject', 'PodMonitor', 'PrometheusRule'];

// Parameter names of KEDA's `kafka` and `temporal` scalers and ScaledObject spec (keda.sh docs, v2.17-2.22): a
// misspelt key is silently ignored by KEDA, so the test refuses any other name.
const KAFKA_TRIGGER_KEYS = [
  'bootstrapServers',
  'bootstrapServersFromEnv',
  'consumerGroup',
  'consumerGroupFromEnv',
  'topic',
  'topicFromEnv',
  'lagThreshold',
  'activationLagThreshold',
  'offsetResetPolicy',
  'allowIdleConsumers',
  'scaleToZeroOnInvalidOffset',
  'excludePersistentLag',
  'limitToPartitionsWithLag',
  'version',
  'partitionLimitation',
  'sasl',
  'tls',
];
const TEMPORAL_TRIGGER_KEYS = [
  'endpoint',
  'endpointFromEnv',
  'namespace',
  'taskQueue',
  'targetQueueSize',
  'activationTargetQueueSize',
  'queueTypes',
  'workerDeploymentName',
  'workerDeploymentBuildId',
  'minConnectTimeout',
  'unsafeSsl',
  'tlsServerName',
];
const SCALED_OBJECT_SPEC_KEYS = [
  'scaleTargetRef',
  'pollingInterval',
  'cooldownPeriod',
  'initialCooldownPeriod',
  'idleReplicaCount',
  'minReplicaCount',
  'maxReplicaCount',
  'fallback',
  'advanced',
  'triggers',
];

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  spec?: Record<string, unknown>;
}
interface Trigger {
  type: string;
  metadata: Record<string, unknown>;
  authenticationRef?: { name: string };
}
interface ScaledObjectSpec {
  scaleTargetRef: { name: string; kind?: string };
  minReplicaCount: number;
  maxReplicaCount: number;
  cooldownPeriod?: number;
  triggers: Trigger[];
}
interface PodTemplateSpec {
  metadata: { labels: Record<string, string> };
  spec: {
    terminationGracePeriodSeconds?: number;
    containers: { ports?: { name?: string; containerPort: number }[] }[];
  };
}
interface PodMonitorSpec {
  selector: {
    matchLabels?: Record<string, string>;
    matchExpressions?: { key: string; operator: string; values: string[] }[];
  };
  podMetricsEndpoints: {
    port: string;
    path?: string;
    relabelings?: { sourceLabels: string[]; targetLabel: string; replacement?: string }[];
  }[];
}

let tools: Kubeconform;
const rendered: Record<string, K8sObject[]> = {};
const yamlOf: Record<string, string> = {};

beforeAll(() => {
  tools = provisionKubeconform();
  for (const dir of ['deploy/k8s', 'deploy/k8s-autoscaled']) {
    yamlOf[dir] = tools.build(path.join(root, dir));
    rendered[dir] = parseAllDocuments(yamlOf[dir]).map((d) => d.toJS() as K8sObject);
  }
}, 600_000);

const objectsOf = (dir: string, kind: string): K8sObject[] =>
  (rendered[dir] ?? []).filter((o) => o.kind === kind);
function one(dir: string, kind: string, name: string): K8sObject {
  const found = objectsOf(dir, kind).filter((o) => o.metadata.name === name);
  expect(found).toHaveLength(1);
  return found[0] as K8sObject;
}
const template = (d: K8sObject): PodTemplateSpec => d.spec?.template as PodTemplateSpec;
const config = (): Record<string, string> => one('deploy/k8s', 'ConfigMap', 'poimen-relay-config').data ?? {};

describe('kubeconform', () => {
  it.each(KUBERNETES_VERSIONS)(
    'finds every built-in object of the base and the overlay valid against Kubernetes %s (strict)',
    (version) => {
      for (const dir of ['deploy/k8s', 'deploy/k8s-autoscaled']) {
        const report = tools.validate(yamlOf[dir] as string, version, CUSTOM_KINDS);
        const custom = (rendered[dir] ?? []).filter((o) => CUSTOM_KINDS.includes(o.kind)).length;
        const problems = report.resources.filter(
          (r) => r.status !== 'statusValid' && r.status !== 'statusSkipped',
        );
        expect({ dir, problems }).toEqual({ dir, problems: [] });
        expect(report.summary).toEqual({
          valid: (rendered[dir]?.length ?? 0) - custom,
          invalid: 0,
          errors: 0,
          skipped: custom,
        });
      }
    },
  );

  it('rejects an unknown field and a wrong type (the check is not vacuous)', () => {
    const d = structuredClone(one('deploy/k8s', 'Deployment', 'poimen-relay-worker')) as K8sObject & {
      spec: Record<string, unknown>;
    };
    d.spec.replica = 3;
    const p = structuredClone(one('deploy/k8s', 'PodDisruptionBudget', 'poimen-relay-worker'));
    (p.spec as Record<string, unknown>).maxUnavailable = { one: 1 };
    const report = tools.validate(`${JSON.stringify(d)}\n---\n${JSON.stringify(p)}\n`, '1.37.0', []);
    expect(report.summary).toMatchObject({ valid: 0, invalid: 2 });
    expect(report.resources.map((r) => r.msg).join('\n')).toMatch(
      /additional properties 'replica' not allowed/,
    );
  });
});

describe('deploy/k8s-autoscaled (KEDA)', () => {
  const dir = 'deploy/k8s-autoscaled';
  const scaled = (name: string): ScaledObjectSpec =>
    one(dir, 'ScaledObject', name).spec as unknown as ScaledObjectSpec;

  it('holds the base plus two ScaledObjects, a PodMonitor and a PrometheusRule, and leaves the replica count to KEDA', () => {
    const kinds = (d: string): string[] =>
      (rendered[d] ?? []).map((o) => `${o.kind}/${o.metadata.name}`).sort();
    const extra = kinds(dir).filter((k) => !kinds('deploy/k8s').includes(k));
    expect(extra).toEqual([
      'PodMonitor/poimen-relay',
      'PrometheusRule/poimen-relay',
      'ScaledObject/poimen-relay-ingester',
      'ScaledObject/poimen-relay-worker',
    ]);
    for (const name of ['poimen-relay-ingester', 'poimen-relay-worker']) {
      expect(one('deploy/k8s', 'Deployment', name).spec?.replicas).toBe(2);
      expect(one(dir, 'Deployment', name).spec).not.toHaveProperty('replicas');
      expect(scaled(name).scaleTargetRef.name).toBe(name);
    }
    for (const o of rendered[dir] ?? [])
      if (o.kind !== 'Namespace') expect(o.metadata.namespace).toBe('poimen');
  });

  it.each(['poimen-relay-ingester', 'poimen-relay-worker'])(
    '%s: only documented ScaledObject and trigger fields, string-valued trigger metadata',
    (name) => {
      const spec = scaled(name);
      expect(Object.keys(spec).filter((k) => !SCALED_OBJECT_SPEC_KEYS.includes(k))).toEqual([]);
      expect(spec.minReplicaCount).toBeGreaterThanOrEqual(2); // the PodDisruptionBudget lets one go at a time
      expect(spec.maxReplicaCount).toBeGreaterThan(spec.minReplicaCount);
      expect(spec.triggers.length).toBeGreaterThan(0);
      for (const trigger of spec.triggers) {
        const known = trigger.type === 'kafka' ? KAFKA_TRIGGER_KEYS : TEMPORAL_TRIGGER_KEYS;
        expect(Object.keys(trigger.metadata).filter((k) => !known.includes(k))).toEqual([]);
        for (const [k, v] of Object.entries(trigger.metadata))
          expect({ k, type: typeof v }).toEqual({ k, type: 'string' });
      }
    },
  );

  it('scales the ingester on its consumer group lag over all dispatch topics, up to their partition count', () => {
    const spec = scaled('poimen-relay-ingester');
    const trigger = spec.triggers[0] as Trigger;
    expect(trigger.type).toBe('kafka');
    // Read from the container's environment, i.e. the ConfigMap: stated once.
    expect(trigger.metadata).toMatchObject({
      bootstrapServersFromEnv: 'KAFKA_BROKERS',
      consumerGroupFromEnv: 'KAFKA_GROUP_ID',
      allowIdleConsumers: 'false',
    });
    expect(config().KAFKA_BROKERS).toBeTruthy();
    expect(config().KAFKA_GROUP_ID).toBeTruthy();
    // No single topic: the lag of every topic the group consumes, i.e. every tenant's dispatch topic.
    expect(trigger.metadata).not.toHaveProperty('topic');
    expect(Number(trigger.metadata.lagThreshold)).toBeGreaterThan(0);
    // The ingester subscribes fromBeginning: a partition without a commit is lag from offset 0.
    expect(read('src/ingest/ingester.ts')).toMatch(/subscribe\(\{ topics, fromBeginning: true \}\)/);
    expect(trigger.metadata.offsetResetPolicy).toBe('earliest');
    const topics = parse(read('deploy/topics.yaml')) as { partitions: number; tenants: string[] };
    expect(spec.maxReplicaCount).toBeLessThanOrEqual(topics.partitions * topics.tenants.length);
  });

  it("scales the worker on its task queue's backlog, read from the ConfigMap's Temporal settings", () => {
    const spec = scaled('poimen-relay-worker');
    const trigger = spec.triggers.find((t) => t.metadata.taskQueue === config().TEMPORAL_TASK_QUEUE)!;
    expect(trigger.type).toBe('temporal');
    expect(trigger.metadata.endpointFromEnv).toBe('TEMPORAL_ADDRESS');
    expect(trigger.metadata.namespace).toBe(config().TEMPORAL_NAMESPACE);
    expect(trigger.metadata.taskQueue).toBe(config().TEMPORAL_TASK_QUEUE);
    expect(String(trigger.metadata.queueTypes).split(',').sort()).toEqual(['activity', 'workflow']);
    expect(Number(trigger.metadata.targetQueueSize)).toBeGreaterThan(0);
    const grace =
      template(one(dir, 'Deployment', 'poimen-relay-worker')).spec.terminationGracePeriodSeconds ?? 30;
    expect(spec.cooldownPeriod ?? 300).toBeGreaterThan(grace);
  });

  it('scales the worker on the backlog of every task queue it polls: dispatch, large-input and dead-letter', () => {
    const spec = scaled('poimen-relay-worker');
    const queue = config().TEMPORAL_TASK_QUEUE!;
    const byQueue = new Map(spec.triggers.map((t) => [t.metadata.taskQueue, t]));
    expect([...byQueue.keys()].sort()).toEqual(
      [queue, largeInputTaskQueue(queue), deadLetterTaskQueue(queue)].sort(),
    );
    for (const side of [largeInputTaskQueue(queue), deadLetterTaskQueue(queue)]) {
      const t = byQueue.get(side)!;
      expect({ side, type: t.type }).toEqual({ side, type: 'temporal' });
      // Only activities run on these queues; the namespace and address are the dispatch queue's.
      expect({ side, queueTypes: t.metadata.queueTypes }).toEqual({ side, queueTypes: 'activity' });
      expect(t.metadata.endpointFromEnv).toBe('TEMPORAL_ADDRESS');
      expect(t.metadata.namespace).toBe(config().TEMPORAL_NAMESPACE);
      expect(Number(t.metadata.targetQueueSize)).toBeGreaterThan(0);
    }
  });
});

describe('deploy/k8s-autoscaled (PodMonitor)', () => {
  const dir = 'deploy/k8s-autoscaled';

  it('scrapes the metrics port of the ingester and the worker, and no Job pod', () => {
    const spec = one(dir, 'PodMonitor', 'poimen-relay').spec as unknown as PodMonitorSpec;
    const selects = (labels: Record<string, string>): boolean =>
      Object.entries(spec.selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v) &&
      (spec.selector.matchExpressions ?? []).every(
        (e) => e.operator === 'In' && e.values.includes(labels[e.key] ?? ''),
      );
    for (const d of objectsOf(dir, 'Deployment')) {
      const pod = template(d);
      expect({ deployment: d.metadata.name, selected: selects(pod.metadata.labels) }).toMatchObject({
        selected: true,
      });
      for (const e of spec.podMetricsEndpoints) {
        expect(pod.spec.containers[0]?.ports?.map((p) => p.name)).toContain(e.port);
        expect(e.path ?? '/metrics').toBe('/metrics');
      }
    }
    for (const j of objectsOf(dir, 'Job')) expect(selects(template(j).metadata.labels)).toBe(false);
  });

  it('labels the series with the job names of deploy/prometheus, so the alerts and dashboard apply', () => {
    const spec = one(dir, 'PodMonitor', 'poimen-relay').spec as unknown as PodMonitorSpec;
    const prom = parse(read('deploy/prometheus/prometheus.yml')) as {
      scrape_configs: { job_name: string }[];
    };
    const relabel = spec.podMetricsEndpoints[0]?.relabelings?.find((r) => r.targetLabel === 'job');
    expect(relabel?.sourceLabels).toEqual(['__meta_kubernetes_pod_label_app_kubernetes_io_component']);
    const jobs = objectsOf(dir, 'Deployment').map((d) =>
      (relabel?.replacement ?? '$1').replace(
        '$1',
        template(d).metadata.labels['app.kubernetes.io/component'] ?? '',
      ),
    );
    expect(jobs.sort()).toEqual(prom.scrape_configs.map((c) => c.job_name).sort());
  });
});
