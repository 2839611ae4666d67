/**
 * One isolated relay per test: fresh tenant (and so topics), consumer group, task queue and runs API double,
 * real Kafka and real Temporal, and the relay's own processes. `cleanup()` stops everything it started.
 */
import { Client, Connection } from '@temporalio/client';
import { Kafka, type Producer, logLevel, type IHeaders } from 'kafkajs';
import { topics, workflowId, type DlqRecord } from '../../src/contract';
import { ensureTopics, tenantTopicSpecs } from '../../src/kafka/topics';
import type { ConflictAllowance } from './conflicts';
import { waitForDeadLetters } from './dlqTopic';
import { expectConflictsExplained } from './lostCompletions';
import { uniqueName, uniqueTenant } from './names';
import { type RelayProcess, relayEnv, startRelayProcess } from './relay';
import { RunsApiDouble } from '../../devstack/runsApiDouble';
import type { RunsApiOptions } from '../../devstack/runsApiDouble';
import { testServices } from './testEnv';
import { waitFor } from './wait';

export interface Harness {
  tenant: string;
  /** Every tenant of this harness (the first is `tenant`); the ingester's pattern matches all of them. */
  tenants: string[];
  api: RunsApiDouble;
  kafka: Kafka;
  client: Client;
  env: NodeJS.ProcessEnv;
  taskQueue: string;
  groupId: string;
  producer: Producer;
  /** `packageRoot`: run another build of the relay (an earlier version) instead of this one. */
  startWorker(label?: string, packageRoot?: string): Promise<RelayProcess>;
  /** `onMetricsPort` learns the port at once, before the ingester is ready (to read /readyz meanwhile). */
  startIngester(label?: string, onMetricsPort?: (port: number) => void): Promise<RelayProcess>;
  publish(
    value: string | Buffer | null,
    opts?: { key?: string; headers?: IHeaders; topic?: string },
  ): Promise<void>;
  dispatchValue(key: string, extra?: Record<string, unknown>): string;
  /**
   * Every dead letter of the tenant's DLQ topic, once at least `expected` arrived: read to the topic's end as it
   * stands then, so a duplicate beyond the expected count is returned too (tests assert exact counts by id).
   */
  readDlq(expected: number, timeoutMs?: number): Promise<DlqRecord[]>;
  /** As readDlq, with each record's Kafka key (contract §6: `<tenant>:<dispatch_key>` when known). */
  readDlqMessages(expected: number, timeoutMs?: number): Promise<{ key: string | null; record: DlqRecord }[]>;
  wfId(key: string): string;
  /** The group's committed offsets and the topic's end offsets, per partition of the tenant's .dispatch. */
  offsets(tenant?: string): Promise<{ partition: number; committed: number; high: number }[]>;
  /**
   * Waits until the group's committed offset equals the log end on every partition of every tenant's .dispatch
   * topic: the shared end-of-drain assertion (an uncommitted tail is redelivered on every rebalance). Then holds
   * every key's 409s to its bound (test/support/conflicts.ts): a second POST the double's dedup would hide fails.
   */
  expectCommittedAtLogEnd(timeoutMs?: number): Promise<void>;
  /** Grants a key 409s beyond its scripted drops, delays and holds (e.g. a worker killed mid-call), with why. */
  allowConflicts(runKey: string, conflicts: number, why: string): void;
  /**
   * Creates one more tenant's topics while the relay runs (multi-tenant harnesses only): the ingester's pattern
   * matches it, and it joins `tenants`, so `expectCommittedAtLogEnd` covers it.
   */
  addTenant(): Promise<string>;
  cleanup(): Promise<void>;
}

export async function createHarness(
  opts: {
    partitions?: number;
    env?: Record<string, string>;
    tenant?: string;
    api?: RunsApiOptions;
    /** How many tenants (default 1); they share a name prefix so one pattern matches exactly them. */
    tenants?: number;
    /** Another Temporal server than the stack's (e.g. one started with other dynamic config). */
    temporalAddress?: string;
    /** Other Kafka brokers than the stack's (e.g. a dedicated broker with other settings). */
    kafkaBrokers?: string[];
  } = {},
): Promise<Harness> {
  const services = testServices();
  const count = opts.tenants ?? 1;
  const prefix = uniqueTenant();
  const tenant = opts.tenant ?? (count > 1 ? `${prefix}x0` : prefix);
  const tenants = [tenant, ...Array.from({ length: count - 1 }, (_, i) => `${prefix}x${i + 1}`)];
  const kafkaBrokers = opts.kafkaBrokers ?? services.kafkaBrokers;
  const kafka = new Kafka({
    clientId: 'it-harness',
    brokers: kafkaBrokers,
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  // Every tenant's topics in one request: the cluster suite's 60 topics took one round trip (and leader wait) each.
  await ensureTopics(
    admin,
    tenants.flatMap((t) => tenantTopicSpecs(t, { partitions: opts.partitions ?? 1 })),
  );
  await admin.disconnect();
  const api = await RunsApiDouble.start(opts.api);
  const temporalAddress = opts.temporalAddress ?? services.temporalAddress;
  const connection = await Connection.connect({ address: temporalAddress });
  const client = new Client({ connection, namespace: services.namespace });
  const producer = kafka.producer({
    allowAutoTopicCreation: false,
    retry: { retries: 30, initialRetryTime: 300, maxRetryTime: 5000 },
  });
  await producer.connect();
  const taskQueue = uniqueName('it-tq');
  const groupId = uniqueName('it-group');
  const env = relayEnv({
    tenantPattern: count > 1 ? `^poimen\\.${prefix}x[0-9]+\\.dispatch$` : `^poimen\\.${tenant}\\.dispatch$`,
    groupId,
    taskQueue,
    runsApiUrl: api.url,
    extra: {
      ...(opts.temporalAddress ? { TEMPORAL_ADDRESS: temporalAddress } : {}),
      ...(opts.kafkaBrokers ? { KAFKA_BROKERS: kafkaBrokers.join(',') } : {}),
      ...opts.env,
    },
  });
  const processes: RelayProcess[] = [];
  const allowances: ConflictAllowance[] = [];

  const h: Harness = {
    tenant,
    tenants,
    api,
    kafka,
    client,
    env,
    taskQueue,
    groupId,
    producer,
    async startWorker(label = 'worker', packageRoot?: string) {
      const p = await startRelayProcess('worker', env, `${tenant}-${label}`, packageRoot);
      processes.push(p);
      return p;
    },
    async startIngester(label = 'ingest', onMetricsPort?: (port: number) => void) {
      const p = await startRelayProcess('ingest', env, `${tenant}-${label}`, undefined, onMetricsPort);
      processes.push(p);
      return p;
    },
    async publish(value, o = {}) {
      await producer.send({
        topic: o.topic ?? topics.dispatch(tenant),
        acks: -1,
        messages: [{ key: o.key ?? null, value, ...(o.headers ? { headers: o.headers } : {}) }],
      });
    },
    dispatchValue(key, extra = {}) {
      return JSON.stringify({
        workflow_ref: 'onboarding@v3',
        input: { user: 42 },
        goal_id: 'g-17',
        dispatch_key: key,
        ...extra,
      });
    },
    async readDlq(expected, timeoutMs = 60_000) {
      return (await h.readDlqMessages(expected, timeoutMs)).map((m) => m.record);
    },
    async readDlqMessages(expected, timeoutMs = 60_000) {
      const letters = await waitForDeadLetters(kafka, [topics.dlq(tenant)], expected, {
        timeoutMs,
        what: `${expected} DLQ records`,
      });
      return letters.flatMap(({ key, record }) =>
        record ? [{ key: key?.toString('utf8') ?? null, record }] : [],
      );
    },
    wfId: (key) => workflowId(tenant, key),
    async offsets(t = tenant) {
      const admin = kafka.admin();
      await admin.connect();
      try {
        const [committed] = await admin.fetchOffsets({ groupId, topics: [topics.dispatch(t)] });
        const high = await admin.fetchTopicOffsets(topics.dispatch(t));
        return high.map((p) => ({
          partition: p.partition,
          committed: Number(committed?.partitions.find((c) => c.partition === p.partition)?.offset ?? -1),
          high: Number(p.high),
        }));
      } finally {
        await admin.disconnect();
      }
    },
    async expectCommittedAtLogEnd(timeoutMs = 30_000) {
      let last = '';
      await waitFor(
        async () => {
          const behind: string[] = [];
          for (const t of tenants) {
            for (const p of await h.offsets(t)) {
              // A partition nothing was ever written to has nothing to commit.
              if (p.high > 0 && p.committed !== p.high)
                behind.push(`${t}/${p.partition}: ${p.committed}/${p.high}`);
            }
          }
          last = behind.join(', ');
          return behind.length === 0;
        },
        { timeoutMs, intervalMs: 250, what: 'committed offsets at the log end' },
      ).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}; behind (committed/end): ${last}`);
      });
      // A 409 past the bound may follow an admission Temporal timed out (./lostCompletions): asked only then.
      await expectConflictsExplained(api, allowances, {
        client,
        logFiles: processes.map((p) => p.logFile),
        tenantScoped: opts.api?.tenantScoped ?? false,
      });
    },
    allowConflicts(runKey, conflicts, why) {
      allowances.push({ runKey, conflicts, why });
    },
    async addTenant() {
      if (count < 2) throw new Error('addTenant needs a harness made with tenants ≥ 2 (one pattern for all)');
      const t = `${prefix}x${tenants.length}`;
      const a = kafka.admin();
      await a.connect();
      try {
        await ensureTopics(a, tenantTopicSpecs(t, { partitions: opts.partitions ?? 1 }));
      } finally {
        await a.disconnect();
      }
      tenants.push(t);
      return t;
    },
    async cleanup() {
      await Promise.all(processes.map((p) => p.kill()));
      await producer.disconnect().catch(() => undefined);
      await api.close();
      await connection.close();
    },
  };
  return h;
}
