/**
 * The shipped monitoring, live: a real Prometheus scrapes a real ingester and worker with the repo's
 * deploy/prometheus config and rules, and each alert of the DLQ design notes (lag > 100, > 10 dead letters a minute,
 * older than 7 days), plus the growing inbox lag, is driven by real records until /api/v1/alerts says `firing`. Then
 * every Grafana panel's query runs against it, so a query naming a metric the relay does not export fails here.
 *
 * The Prometheus copies differ from the shipped files only in intervals, targets and `for:` (1 s and 5 s here,
 * where production waits 5 to 15 minutes): test/support/prometheusTestConfig.ts. Thresholds and range windows
 * are the shipped ones, which is why the inbox burst is over 1000 records and the DLQ burst over 50.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { topics } from '../src/contract';
import { tenantTopicSpecs } from '../src/kafka/topics';
import { REPO_ROOT } from './support/cli';
import { dashboardQueries, metricNamesIn } from './support/dashboardQueries';
import { type GrpcProxy, startGrpcProxy } from './support/grpcProxy';
import { type LivePrometheus, type PromAlert, startPrometheus } from './support/livePrometheus';
import { type RelayProcess, startRelayProcess } from './support/relay';
import { type Harness, createHarness } from './support/relayHarness';
import { testServices } from './support/testEnv';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

const INTERVAL = '1s';
const FOR = '5s';
/** Grafana's $__rate_interval, here long enough that a rate covers the whole scenario. */
const RATE_WINDOW = '5m';
const EIGHT_DAYS_MS = 8 * 24 * 3600 * 1000;
/** gRPC UNAVAILABLE: an outage to the ingester, which holds the partition uncommitted and retries. */
const UNAVAILABLE = 14;

type ShippedRule = { alert?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
const SHIPPED_RULES = (
  parse(fs.readFileSync(path.join(REPO_ROOT, 'deploy/prometheus/alerts.yml'), 'utf8')) as {
    groups: { rules: ShippedRule[] }[];
  }
).groups.flatMap((g) => g.rules);

let h: Harness;
let proxy: GrpcProxy;
let ingester: RelayProcess | undefined;
let prom: LivePrometheus | undefined;
/** What the proxy in front of Temporal refuses (read at each call): empty until the inbox backlog is wanted. */
const refusals: Record<string, number> = {};
let dlqTenant: string;
let lagTenant: string;

const malformed = (n: number) => Array.from({ length: n }, () => ({ value: '{"broken": ' }));
const dispatches = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({ value: h.dispatchValue(`${prefix}-${i}`) }));

/** Waits until the live Prometheus's instant query `expr` returns a series. */
async function promHas(expr: string, what: string): Promise<void> {
  await waitFor(async () => (await prom!.query(expr)).length > 0, {
    timeoutMs: 60_000,
    intervalMs: 500,
    what,
  });
}

beforeAll(async () => {
  // Test speed: the DLQ gauges are read here, and the shipped 30 s refresh would add that wait to each read.
  h = await createHarness({ tenants: 2, env: { POIMEN_DLQ_REFRESH_MS: '500' } });
  [dlqTenant, lagTenant] = h.tenants as [string, string];
  // Only the ingester goes through the proxy: the worker and the test's own client reach Temporal directly.
  proxy = await startGrpcProxy(testServices().temporalAddress, refusals);
  const worker = await h.startWorker();
  ingester = await startRelayProcess(
    'ingest',
    { ...h.env, TEMPORAL_ADDRESS: proxy.address },
    `${dlqTenant}-ingest`,
  );
  prom = await startPrometheus({
    targets: {
      'poimen-ingester': [`127.0.0.1:${ingester.metricsPort}`],
      'poimen-worker': [`127.0.0.1:${worker.metricsPort}`],
    },
    interval: INTERVAL,
    forDuration: FOR,
  });

  // Traffic the dashboard's runs-API and latency panels show: three runs, one after a retried 503.
  h.api.scriptFor('flow-0', { kind: 'status', status: 503 });
  // The old dead letter first: the oldest-age gauge reads the first record not yet replayed (as in it_operations).
  await h.producer.send({
    topic: topics.dlq(dlqTenant),
    messages: [{ value: '{"id":"old"}', timestamp: String(Date.now() - EIGHT_DAYS_MS) }],
  });
  await h.producer.send({
    topic: topics.dispatch(dlqTenant),
    messages: [...dispatches('flow', 3), ...malformed(1)],
  });
  await waitFor(() => h.api.runs.size === 3, { what: 'three runs' });
  // The counters' first samples before the bursts: rate() counts nothing of a series that appears already high.
  await promHas(
    `dlq_messages_sent_total{topic="${topics.dlq(dlqTenant)}"} == 1`,
    'the first dead letter scraped',
  );
  await promHas(`poimen_inbox_lag{topic="${topics.dispatch(lagTenant)}"} == 0`, 'the idle inbox scraped');

  // Temporal "unavailable" to the ingester: the lag tenant's dispatches wait uncommitted, as in an outage.
  refusals.StartWorkflowExecution = UNAVAILABLE;
  await h.producer.send({ topic: topics.dispatch(lagTenant), messages: dispatches('lag-a', 600) });
  await h.producer.send({ topic: topics.dispatch(dlqTenant), messages: malformed(150) });
  await promHas(
    `poimen_inbox_lag{topic="${topics.dispatch(lagTenant)}"} >= 600`,
    'the first backlog scraped',
  );
  // Then more: the rule wants the backlog over 1000 and higher than earlier in its window.
  await h.producer.send({ topic: topics.dispatch(lagTenant), messages: dispatches('lag-b', 600) });
});

afterAll(async () => {
  await prom?.stop();
  await ingester?.kill();
  await h?.cleanup();
  await proxy?.close();
  if (h) {
    const admin = h.kafka.admin();
    await admin.connect();
    const names = h.tenants.flatMap((t) => tenantTopicSpecs(t).map((s) => s.topic));
    await admin.deleteTopics({ topics: names }).catch(() => undefined);
    await admin.disconnect();
  }
});

/** The alert firing for `topic`, with the shipped rule's severity and runbook; on timeout, what Prometheus had. */
async function expectFiring(alertname: string, topic: string): Promise<PromAlert> {
  let seen: PromAlert[] = [];
  const alert = await waitFor(
    async () => {
      seen = await prom!.alerts();
      return seen.find(
        (a) => a.labels.alertname === alertname && a.labels.topic === topic && a.state === 'firing',
      );
    },
    { timeoutMs: 120_000, intervalMs: 1000, what: `${alertname} firing for ${topic}` },
  ).catch((err: unknown) => {
    const states = seen.map((a) => `${a.labels.alertname}/${a.labels.topic}: ${a.state} ${a.value}`);
    throw new Error(`${(err as Error).message}; alerts then: ${states.join(', ') || 'none'}`);
  });
  const rule = SHIPPED_RULES.find((r) => r.alert === alertname)!;
  expect(alert.labels.severity).toBe(rule.labels?.severity);
  expect(alert.annotations.runbook_url).toBe(rule.annotations?.runbook_url);
  return alert;
}

describe('the shipped alert rules, on a live Prometheus scraping the relay', () => {
  test('the test copy of the rules changed only `for:`, and only of rules that have one', () => {
    expect(prom!.forOverrides.map((o) => o.alert).sort()).toEqual(
      SHIPPED_RULES.filter((r) => 'for' in r)
        .map((r) => r.alert)
        .sort(),
    );
    expect(prom!.forOverrides.every((o) => o.test === FOR)).toBe(true);
  });

  test('PoimenDlqLagHigh fires: over 100 dead letters of a tenant not replayed', async () => {
    const alert = await expectFiring('PoimenDlqLagHigh', topics.dlq(dlqTenant));
    expect(Number(alert.value)).toBeGreaterThan(100);
  });

  test('PoimenDlqRateHigh fires: a burst of malformed dispatches dead-lettered, over 10 a minute', async () => {
    const alert = await expectFiring('PoimenDlqRateHigh', topics.dlq(dlqTenant));
    expect(Number(alert.value)).toBeGreaterThan(10);
  });

  test('PoimenDlqMessagesOld fires: a dead letter older than 7 days waits', async () => {
    const alert = await expectFiring('PoimenDlqMessagesOld', topics.dlq(dlqTenant));
    expect(Number(alert.value)).toBeGreaterThan(EIGHT_DAYS_MS / 1000 - 600);
  });

  test('PoimenInboxLagGrowing fires: over 1000 dispatch records uncommitted and growing (Temporal refusing starts)', async () => {
    const alert = await expectFiring('PoimenInboxLagGrowing', topics.dispatch(lagTenant));
    expect(Number(alert.value)).toBeGreaterThan(1000);
  });
});

describe('the Grafana dashboard, on the same live Prometheus', () => {
  test("every panel's query returns series, and names only metrics the relay exports", async () => {
    const queries = dashboardQueries([dlqTenant, lagTenant], RATE_WINDOW);
    expect(queries.length).toBeGreaterThan(0);
    const leftover = queries.filter((q) => q.expr.includes('$'));
    expect(leftover).toEqual([]);
    // The SDK's empty-poll counters first appear when an idle worker's long poll comes back empty, about half a
    // minute after its last task, and a rate needs two samples: the check is repeated until it holds (a query
    // naming a metric the relay does not export fails when the wait runs out).
    const problemsNow = async (): Promise<string[]> => {
      const exported = new Set(await prom!.metricNames());
      const found: string[] = [];
      for (const { panel, expr } of queries) {
        const names = metricNamesIn(expr);
        if (names.length === 0) found.push(`${panel}: no metric found in ${expr}`);
        for (const n of names) if (!exported.has(n)) found.push(`${panel}: ${n} is not exported (${expr})`);
        if ((await prom!.query(expr)).length === 0) found.push(`${panel}: no series for ${expr}`);
      }
      return found;
    };
    let problems: string[] = [];
    await waitFor(async () => (problems = await problemsNow()).length === 0, {
      timeoutMs: 120_000,
      intervalMs: 2000,
      what: "every dashboard query's series",
    }).catch(() => undefined);
    expect(problems).toEqual([]);
  });
});
