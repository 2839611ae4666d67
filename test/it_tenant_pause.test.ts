/**
 * Pausing a tenant (contract §2, "Pausing a tenant"; operations.md, "Pause and resume a tenant"): `poimen-relay tenant pause`
 * stops every ingester starting the tenant's dispatches, which wait in Kafka uncommitted (its lag), while the other
 * tenants flow and every ingester stays ready; the pause outlives an ingester's restart; `tenant resume` drains
 * what waited, each dispatch once. Real Kafka and Temporal, two ingesters and two workers of the relay, the CLI as
 * an operator runs it.
 */
import { topics } from '../src/contract';
import { TENANT_PAUSES_TOPIC } from '../src/contract/names';
import { readTenantPauses, writeTenantPause } from '../src/kafka/tenantPauses';
import { TenantPauseFollower } from '../src/kafka/tenantPauseFollower';
import { createLogger } from '../src/logger';
import { createMetrics } from '../src/metrics';
import { runCli } from './support/cli';
import { type RelayProcess, metricValue } from './support/relay';
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

jest.setTimeout(300_000);

let h: Harness;
afterEach(async () => {
  await h?.cleanup();
});

const N = 12;

async function cli(args: string[]): Promise<string> {
  const r = await runCli(args, h.env, 120_000);
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
  return r.stdout;
}

async function pausedGauge(p: RelayProcess, tenant: string): Promise<number | undefined> {
  return metricValue(await p.metrics(), 'poimen_tenant_paused', { tenant });
}

async function readyz(p: RelayProcess): Promise<number> {
  return (await fetch(`http://127.0.0.1:${p.metricsPort}/readyz`)).status;
}

function runsOf(prefix: string): number {
  return [...h.api.runs.keys()].filter((k) => k.startsWith(prefix)).length;
}

async function lag(tenant: string): Promise<number> {
  return (await h.offsets(tenant)).reduce((sum, p) => sum + p.high - Math.max(0, p.committed), 0);
}

test("a paused tenant's records wait in Kafka on every ingester, through a restart, and run once each after resume", async () => {
  h = await createHarness({ tenants: 2, partitions: 2 });
  const [paused, other] = h.tenants as [string, string];

  expect(await cli(['tenant', 'status', paused])).toBe(`${paused}: not paused (never paused)\n`);
  const said = await cli(['tenant', 'pause', paused, '--reason', 'API migration']);
  expect(said).toMatch(new RegExp(`^${paused} +paused since \\S+ by \\S+: API migration\\n$`));
  const [status] = JSON.parse(await cli(['tenant', 'status', paused, '--json'])) as { at: string }[];
  expect(status).toMatchObject({ tenant: paused, paused: true, reason: 'API migration' });
  // Paused again: still paused since the first time, with its reason unless a new one is given.
  expect(await cli(['tenant', 'pause', paused])).toMatch(/API migration \(it was paused already\)\n$/);
  const again = JSON.parse(
    await cli(['tenant', 'pause', paused, '--reason', 'migration, day 2', '--json']),
  ) as {
    after: { at: string; reason: string };
  };
  expect(again.after).toMatchObject({ at: status!.at, reason: 'migration, day 2' });

  const ingesters = [await h.startIngester('ingest-1'), await h.startIngester('ingest-2')];
  await h.startWorker('worker-1');
  await h.startWorker('worker-2');
  for (let i = 0; i < N; i++) {
    await h.publish(h.dispatchValue(`p-${i}`), { topic: topics.dispatch(paused), key: `k${i}` });
    await h.publish(h.dispatchValue(`o-${i}`), { topic: topics.dispatch(other), key: `k${i}` });
  }
  await waitFor(() => runsOf('o-') === N, { timeoutMs: 120_000, what: `the other tenant's ${N} runs` });
  // Both ingesters hold partitions of the paused tenant (two partitions, keys spread over both).
  for (const p of ingesters) {
    expect(await pausedGauge(p, paused)).toBe(1);
    expect(await readyz(p)).toBe(200);
  }
  expect(runsOf('p-')).toBe(0);
  expect(await lag(paused)).toBe(N);

  // A restarted ingester reads the pause before it consumes anything.
  await ingesters[0]!.stop();
  ingesters[0] = await h.startIngester('ingest-3');
  for (let i = N; i < 2 * N; i++) {
    await h.publish(h.dispatchValue(`o-${i}`), { topic: topics.dispatch(other), key: `k${i}` });
  }
  await waitFor(() => runsOf('o-') === 2 * N, { timeoutMs: 120_000, what: "the other tenant's next runs" });
  expect(await pausedGauge(ingesters[0], paused)).toBe(1);
  expect(runsOf('p-')).toBe(0);
  expect(await lag(paused)).toBe(N);

  // Nothing of this tenant was started, so nothing is held: resumed without Temporal (a closed port) to wake.
  const resumed = await runCli(['tenant', 'resume', paused, '--no-wake'], {
    ...h.env,
    TEMPORAL_ADDRESS: '127.0.0.1:9',
  });
  expect(resumed).toMatchObject({ code: 0, stderr: '' });
  expect(resumed.stdout).toMatch(new RegExp(`^${paused} +resumed at [^\n]*\n$`));
  await waitFor(() => runsOf('p-') === N, { timeoutMs: 120_000, what: `the paused tenant's ${N} runs` });
  await h.expectCommittedAtLogEnd(60_000);
  const posts = h.api.requests.filter((r) =>
    (r.json as { dispatch_key?: string })?.dispatch_key?.startsWith('p-'),
  );
  expect(posts.filter((r) => r.answer === 201)).toHaveLength(N);
  for (const p of ingesters) {
    await waitFor(async () => (await pausedGauge(p, paused)) === 0, {
      timeoutMs: 10_000,
      what: 'the gauge at 0',
    });
  }
  const [after] = JSON.parse(await cli(['tenant', 'status', paused, '--json'])) as { paused: boolean }[];
  expect(after).toMatchObject({ tenant: paused, paused: false });
});

test('a tenant name outside the contract is refused in one line, before Kafka is asked', async () => {
  h = await createHarness();
  const r = await runCli(['tenant', 'pause', 'Not.A.Tenant'], h.env, 60_000);
  expect(r.code).toBe(2);
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  expect(r.stderr).toContain('<tenant>');
});

test('a tombstone for a tenant deletes its pause, for a running follower as for one started after it', async () => {
  h = await createHarness();
  const tenant = h.tenant;
  const metrics = createMetrics({ defaultMetrics: false });
  const follower = new TenantPauseFollower(h.kafka, {
    logger: createLogger('it-tenant-pause', 'silent'),
    gauge: metrics.tenantPaused,
  });
  const admin = h.kafka.admin();
  await admin.connect();
  const producer = h.kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  try {
    await writeTenantPause(h.kafka, admin, {
      tenant,
      paused: true,
      reason: 'offboarding',
      at: new Date().toISOString(),
      by: null,
    });
    await follower.start();
    expect(follower.pauseOf(tenant)?.reason).toBe('offboarding');

    // The tenant is offboarded: its pause record is deleted the way a compacted topic deletes a key.
    await producer.send({ topic: TENANT_PAUSES_TOPIC, acks: -1, messages: [{ key: tenant, value: null }] });
    await waitFor(async () => follower.pauseOf(tenant) === undefined, {
      timeoutMs: 20_000,
      what: 'the pause deleted',
    });
    expect(follower.all().has(tenant)).toBe(false);
    expect((await metrics.tenantPaused.get()).values.filter((v) => v.labels.tenant === tenant)).toEqual([]);
    // A process started later (the tombstone read, or the key compacted away) agrees.
    expect((await readTenantPauses(h.kafka)).has(tenant)).toBe(false);
  } finally {
    await follower.close();
    await producer.disconnect();
    await admin.disconnect();
  }
});
