/* eslint-disable max-lines -- the production-shape scenarios share one multi-tenant set-up */
/**
 * The ingester in the shape production runs it: many tenant topics in one consumer, outages longer than the
 * start deadline, commits racing the records they cover. Real Kafka, real Temporal, the relay's processes.
 */
import fs from 'node:fs';
import {
  AclOperationTypes,
  AssignerProtocol,
  AclPermissionTypes,
  AclResourceTypes,
  ResourcePatternTypes,
} from 'kafkajs';
import { topics } from '../src/contract';
import { startService, stopService } from './support/faults';
import { metricValue, type RelayProcess } from './support/relay';
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

jest.setTimeout(300_000);

let h: Harness;
afterEach(async () => {
  await h?.cleanup();
});

async function completed(keysByTenant: Map<string, string[]>, timeoutMs: number): Promise<void> {
  for (const [tenant, keys] of keysByTenant) {
    for (const key of keys) {
      const handle = h.client.workflow.getHandle(`dispatch:${tenant}:${key}`);
      await waitFor(() => handle.describe().then((d) => d.status.name === 'COMPLETED'), {
        timeoutMs,
        what: `dispatch ${tenant}:${key} to complete`,
      });
    }
  }
}

/** Topics for which the ingester has logged a failed start (pino JSON lines in its log file). */
function topicsWithFailedStarts(ingester: RelayProcess): Set<string> {
  const seen = new Set<string>();
  for (const line of fs.readFileSync(ingester.logFile, 'utf8').split('\n')) {
    if (!line.includes('could not start or dead-letter record')) continue;
    try {
      const { topic } = JSON.parse(line) as { topic?: string };
      if (topic) seen.add(topic);
    } catch {
      // a partial last line
    }
  }
  return seen;
}

async function readyz(ingester: RelayProcess): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${ingester.metricsPort}/readyz`);
  return { status: res.status, text: await res.text() };
}

describe('ingester under production conditions', () => {
  test('six tenant topics, Temporal down longer than the start deadline: every topic resumes, drains to its end and relays fresh records', async () => {
    h = await createHarness({
      tenants: 6,
      api: { tenantScoped: true },
      env: {
        POIMEN_TEMPORAL_START_TIMEOUT_MS: '1000',
        // Every tenant's batch is in the handler at once, as when one fetch brings records of all of them.
        POIMEN_INGEST_PARTITIONS_CONCURRENTLY: '8',
      },
    });
    await h.startWorker();
    const ingester = await h.startIngester();
    const warm = new Map(h.tenants.map((t) => [t, ['warm']]));
    for (const t of h.tenants) await h.publish(h.dispatchValue('warm'), { topic: topics.dispatch(t) });
    await completed(warm, 60_000);

    const during = new Map(h.tenants.map((t) => [t, ['out-1', 'out-2', 'out-3']]));
    await stopService('temporal');
    try {
      for (const [t, keys] of during) {
        for (const k of keys) await h.publish(h.dispatchValue(k), { topic: topics.dispatch(t) });
      }
      // Past the start deadline on every topic: each tenant's first record has failed at least once.
      await waitFor(() => topicsWithFailedStarts(ingester).size === h.tenants.length, {
        timeoutMs: 60_000,
        what: 'a failed start on every tenant topic',
      });
      const r = await readyz(ingester);
      expect(r.status).toBe(503);
      expect(r.text).toMatch(/paused/);
      // What is paused is visible: one gauge sample per paused topic.
      const text = await ingester.metrics();
      const paused = h.tenants.map(
        (t) => metricValue(text, 'poimen_ingest_paused_partitions', { topic: topics.dispatch(t) }) ?? 0,
      );
      expect(paused.every((n) => n >= 1)).toBe(true);
    } finally {
      await startService('temporal');
    }

    await completed(during, 120_000);
    await h.expectCommittedAtLogEnd(60_000);
    // Nothing stays paused, and the process says so.
    await waitFor(async () => (await readyz(ingester)).status === 200, { what: '/readyz ready again' });
    const after = await ingester.metrics();
    for (const t of h.tenants) {
      expect(metricValue(after, 'poimen_ingest_paused_partitions', { topic: topics.dispatch(t) }) ?? 0).toBe(
        0,
      );
    }
    // Fresh records on every tenant are relayed without a rebalance.
    const fresh = new Map(h.tenants.map((t) => [t, ['fresh']]));
    for (const t of h.tenants) await h.publish(h.dispatchValue('fresh'), { topic: topics.dispatch(t) });
    await completed(fresh, 60_000);
    await h.expectCommittedAtLogEnd();
    for (const t of h.tenants) {
      for (const k of ['warm', 'out-1', 'out-2', 'out-3', 'fresh']) {
        const calls = h.api.requests.filter(
          (r) => r.headers['x-tenant-id'] === t && (r.json as { dispatch_key?: string }).dispatch_key === k,
        );
        expect(calls).toHaveLength(1);
      }
    }
  });

  test('a batch whose records complete while an offset commit is in flight is committed to its end', async () => {
    // A commit after every record makes commits overlap the completions of later records of the same batch.
    h = await createHarness({ env: { POIMEN_INGEST_COMMIT_EVERY: '1', POIMEN_INGEST_MAX_IN_FLIGHT: '64' } });
    await h.startWorker();
    await h.startIngester();
    const keys = Array.from({ length: 60 }, (_, i) => `tail-${i}`);
    await h.producer.send({
      topic: topics.dispatch(h.tenant),
      acks: -1,
      messages: keys.map((k) => ({ key: null, value: h.dispatchValue(k) })),
    });
    await completed(new Map([[h.tenant, keys]]), 120_000);
    // No further record arrives to carry a later commit: the batch's own last commit must cover its end.
    await h.expectCommittedAtLogEnd(20_000);
  });
});

describe('ingester when kafkajs gives up on its consumer', () => {
  test('access to the group revoked (a non-retriable crash) and given back: the consumer is restarted and relays again', async () => {
    h = await createHarness();
    await h.startWorker();
    const ingester = await h.startIngester();
    await h.publish(h.dispatchValue('before'));
    await completed(new Map([[h.tenant, ['before']]]), 60_000);

    const admin = h.kafka.admin();
    await admin.connect();
    const deny = {
      resourceType: AclResourceTypes.GROUP,
      resourceName: h.groupId,
      resourcePatternType: ResourcePatternTypes.LITERAL,
      principal: 'User:ANONYMOUS',
      host: '*',
      operation: AclOperationTypes.ALL,
      permissionType: AclPermissionTypes.DENY,
    };
    try {
      await admin.createAcls({ acl: [deny] });
      // kafkajs reports the crash with restart: false and would leave the consumer stopped for good.
      await waitFor(
        () =>
          /consumer crashed[^\n]*"restart":false|"restart":false[^\n]*consumer crashed/.test(
            fs.readFileSync(ingester.logFile, 'utf8'),
          ),
        {
          timeoutMs: 90_000,
          what: 'the consumer to crash without a kafkajs restart',
        },
      );
      const r = await readyz(ingester);
      expect(r.status).toBe(503);
      expect(r.text).toMatch(/consumer crashed/);
      await h.publish(h.dispatchValue('during'));
    } finally {
      await admin.deleteAcls({ filters: [deny] });
      await admin.disconnect();
    }
    await h.publish(h.dispatchValue('after'));
    await completed(new Map([[h.tenant, ['during', 'after']]]), 120_000);
    await h.expectCommittedAtLogEnd();
    await waitFor(async () => (await readyz(ingester)).status === 200, { what: '/readyz ready again' });
  });
});

describe('several ingesters in one group', () => {
  test('two ingesters, a third joins mid-stream and one is SIGKILLed: every dispatch relayed once, one execution each, offsets at the log end', async () => {
    h = await createHarness({
      tenants: 3,
      partitions: 4,
      api: { tenantScoped: true },
      // A killed member's partitions move after this, not after the 30 s default.
      env: { POIMEN_KAFKA_SESSION_TIMEOUT_MS: '6000' },
    });
    await h.startWorker();
    const first = await h.startIngester('ingest-1');
    await h.startIngester('ingest-2');
    const perTenant = 80;
    const keys = Array.from({ length: perTenant }, (_, i) => `m-${i}`);
    const publishSlice = async (from: number, to: number) => {
      for (const t of h.tenants) {
        await h.producer.send({
          topic: topics.dispatch(t),
          acks: -1,
          messages: keys.slice(from, to).map((k) => ({ key: k, value: h.dispatchValue(k) })),
        });
      }
    };
    await publishSlice(0, 30);
    const third = h.startIngester('ingest-3');
    await publishSlice(30, 55);
    await third;
    // A crash mid-stream: its uncommitted records are redelivered to the others.
    await first.kill();
    await publishSlice(55, perTenant);

    await completed(new Map(h.tenants.map((t) => [t, keys])), 180_000);
    await h.expectCommittedAtLogEnd(60_000);
    for (const t of h.tenants) {
      const calls = h.api.requests.filter((r) => r.headers['x-tenant-id'] === t);
      const perKey = new Map<string, number>();
      for (const c of calls) {
        const k = (c.json as { dispatch_key: string }).dispatch_key;
        perKey.set(k, (perKey.get(k) ?? 0) + 1);
      }
      expect([...perKey.keys()].sort()).toEqual([...keys].sort());
      // No fault reached the API, so a second call for a key could only be a second execution's.
      expect([...perKey.values()].every((n) => n === 1)).toBe(true);
      // Visibility trails the executions by a moment: wait until it lists them all.
      const executions = await waitFor(
        async () => {
          const seen = new Map<string, number>();
          for await (const wf of h.client.workflow.list({ query: `TenantId = '${t}'` })) {
            seen.set(wf.workflowId, (seen.get(wf.workflowId) ?? 0) + 1);
          }
          return seen.size >= perTenant ? seen : undefined;
        },
        { what: `visibility to list ${perTenant} executions of ${t}` },
      );
      expect(executions.size).toBe(perTenant);
      expect([...executions.values()].every((n) => n === 1)).toBe(true);
    }
  });
});

/** The group's state and, per member, how many partitions it is assigned (kafkajs's own assignment format). */
async function groupShape(h: Harness): Promise<{ state: string; assigned: number[] }> {
  const admin = h.kafka.admin();
  await admin.connect();
  try {
    const { groups } = await admin.describeGroups([h.groupId]);
    const g = groups[0]!;
    const assigned = g.members.map((m) => {
      const decoded = AssignerProtocol.MemberAssignment.decode(m.memberAssignment);
      return Object.values(decoded?.assignment ?? {}).reduce((n, parts) => n + parts.length, 0);
    });
    return { state: g.state, assigned };
  } finally {
    await admin.disconnect();
  }
}

describe('a rebalance while an ingester is deep in a batch', () => {
  test('a second ingester joining while the first works through a fetched backlog gets partitions before that backlog is done: the first ends its batch and rejoins instead of finishing it outside the new generation', async () => {
    // One start at a time: the fetched backlog takes the first ingester many heartbeats to work through.
    h = await createHarness({
      partitions: 2,
      // Admission off: no worker runs, so the whole backlog must be started into Temporal (none of it closes).
      env: {
        POIMEN_INGEST_MAX_IN_FLIGHT: '1',
        POIMEN_KAFKA_SESSION_TIMEOUT_MS: '6000',
        POIMEN_INGEST_MAX_OPEN: '0',
      },
    });
    const total = 3000;
    const keys = Array.from({ length: total }, (_, i) => `deep-${i}`);
    for (let i = 0; i < total; i += 200) {
      await h.producer.send({
        topic: topics.dispatch(h.tenant),
        acks: -1,
        messages: keys.slice(i, i + 200).map((k) => ({ key: k, value: h.dispatchValue(k) })),
      });
    }
    const started = async () => (await h.client.workflow.count(`TaskQueue="${h.taskQueue}"`)).count;
    await h.startIngester('ingest-a');
    await waitFor(async () => (await started()) >= 50, {
      timeoutMs: 120_000,
      what: '50 starts by the first ingester',
    });
    const second = await h.startIngester('ingest-b');
    // The group settles with both members holding a partition; the backlog is not through yet when it does.
    const settled = await waitFor(
      async () => {
        const shape = await groupShape(h);
        const ok =
          shape.state === 'Stable' && shape.assigned.length === 2 && shape.assigned.every((n) => n > 0);
        return ok ? { shape, startedThen: await started() } : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 250, what: 'the group stable with two members holding partitions' },
    );
    expect(settled.startedThen).toBeLessThan(total);
    await waitFor(async () => (await started()) === total, {
      timeoutMs: 240_000,
      what: `${total} executions`,
    });
    await h.expectCommittedAtLogEnd(60_000);
    // The joining member did part of the backlog, and no dispatch has two executions.
    const byB = Number(
      metricValue(await second.metrics(), 'poimen_dispatch_records_total', { outcome: 'started' }) ?? 0,
    );
    expect(byB).toBeGreaterThan(0);
    // Every execution listed, a second one of the same id included.
    const listed: string[] = [];
    for await (const wf of h.client.workflow.list({ query: `TaskQueue="${h.taskQueue}"` })) {
      listed.push(wf.workflowId);
    }
    expect(listed).toHaveLength(total);
    expect(new Set(listed).size).toBe(total);
  });
});

describe('many tenants', () => {
  test('twenty tenant topics and one created mid-stream, through a Temporal outage and a broker restart: each dispatch relayed once, one execution each, offsets at the log end on every topic', async () => {
    h = await createHarness({
      tenants: 20,
      api: { tenantScoped: true },
      env: { POIMEN_TEMPORAL_START_TIMEOUT_MS: '1000', POIMEN_INGEST_PARTITIONS_CONCURRENTLY: '8' },
    });
    expect(new Set(h.tenants).size).toBe(20);
    await h.startWorker();
    const ingester = await h.startIngester();
    const expected = new Map<string, string[]>();
    const publishWave = async (wave: string, to: string[]) => {
      for (const t of to) {
        const keys = [1, 2, 3].map((i) => `${wave}-${i}`);
        expected.set(t, [...(expected.get(t) ?? []), ...keys]);
        // kafkajs gives up at once on a refused connection to its only broker: keep trying, as a producing
        // application would (a repeat of a send that did land is a redelivery, one workflow id either way).
        await waitFor(
          () =>
            h.producer
              .send({
                topic: topics.dispatch(t),
                acks: -1,
                messages: keys.map((k) => ({ key: `${t}:${k}`, value: h.dispatchValue(k) })),
              })
              .then(() => true),
          { timeoutMs: 120_000, intervalMs: 500, what: `wave ${wave} published to ${t}` },
        );
      }
    };
    const total = () => [...expected.values()].reduce((n, keys) => n + keys.length, 0);
    const allCompleted = async () => {
      const { count } = await h.client.workflow.count(
        `TaskQueue="${h.taskQueue}" AND ExecutionStatus="Completed"`,
      );
      return count === total();
    };

    await publishWave('a', h.tenants);
    // Completed, not only posted: no activity is mid-completion when Temporal goes away.
    await waitFor(allCompleted, { timeoutMs: 120_000, intervalMs: 500, what: 'wave a completed' });

    // Temporal away while every tenant receives records, and a new tenant's topic appears meanwhile.
    const fresh = await (async () => {
      await stopService('temporal');
      try {
        await publishWave('b', h.tenants);
        const t = await h.addTenant();
        await publishWave('b', [t]);
        // The ingester found the new topic by its refresh, and tried (and failed) to start its record.
        await waitFor(() => topicsWithFailedStarts(ingester).has(topics.dispatch(t)), {
          timeoutMs: 60_000,
          what: 'a failed start on the new tenant topic',
        });
        return t;
      } finally {
        await startService('temporal');
      }
    })();
    await waitFor(allCompleted, { timeoutMs: 180_000, intervalMs: 500, what: 'wave b completed' });
    await h.expectCommittedAtLogEnd(60_000);

    // The broker goes away while records are being produced; the producer retries until it is back.
    await stopService('kafka');
    const waveC = publishWave('c', h.tenants);
    // Awaited below; a rejection meanwhile must not go unhandled.
    waveC.catch(() => undefined);
    // The broker's restart (a JVM start, seconds) is the outage the sends and the ingester ride out.
    await startService('kafka');
    await waveC;
    expect(h.tenants).toContain(fresh);
    expect(total()).toBe(20 * 9 + 2 * 3);
    await waitFor(allCompleted, { timeoutMs: 180_000, intervalMs: 500, what: 'wave c completed' });
    await h.expectCommittedAtLogEnd(60_000);

    // The wire: exactly one POST per tenant and key (no API fault was scripted, and no activity was in flight
    // at an outage, so a second call could only come from a second execution or a relay repeating itself).
    const perKey = new Map<string, number>();
    for (const r of h.api.requests) {
      const k = `${String(r.headers['x-tenant-id'])}/${(r.json as { dispatch_key: string }).dispatch_key}`;
      perKey.set(k, (perKey.get(k) ?? 0) + 1);
    }
    const want = [...expected].flatMap(([t, keys]) => keys.map((k) => `${t}/${k}`)).sort();
    expect([...perKey.keys()].sort()).toEqual(want);
    expect([...perKey].filter(([, n]) => n !== 1)).toEqual([]);

    // Temporal: one execution per dispatch, per tenant (visibility trails the executions by a moment).
    for (const [t, keys] of expected) {
      const executions = await waitFor(
        async () => {
          const seen = new Map<string, number>();
          for await (const wf of h.client.workflow.list({ query: `TenantId = '${t}'` })) {
            seen.set(wf.workflowId, (seen.get(wf.workflowId) ?? 0) + 1);
          }
          return seen.size >= keys.length ? seen : undefined;
        },
        { what: `visibility to list ${keys.length} executions of ${t}` },
      );
      expect([...executions.keys()].sort()).toEqual(keys.map((k) => `dispatch:${t}:${k}`).sort());
      expect([...executions.values()].every((n) => n === 1)).toBe(true);
    }
  });
});
