/**
 * One tenant's flood does not starve the others (docs/design.md, "Fair turns for tenants"): every start carries
 * its tenant as Temporal's fairness key, and the stack's Temporal serves a task queue's backlog in turns per key.
 * Real Kafka, real Temporal (fairness switched on by the stack), the relay's processes.
 */
import fs from 'node:fs';
import { topics } from '../src/contract';
import { metricValue } from './support/relay';
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

jest.setTimeout(300_000);

let h: Harness;
afterEach(async () => {
  await h?.cleanup();
});

async function started(metricsPort: number, tenant: string): Promise<number> {
  const text = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.text());
  return metricValue(text, 'poimen_dispatch_records_total', { tenant, outcome: 'started' }) ?? 0;
}

describe('fairness between tenants', () => {
  test("a tenant's backlog waiting in Temporal does not hold another tenant's dispatches back to its end (turns are taken within each task queue partition), and every start carries its tenant as fairness key (with its configured weight)", async () => {
    const FLOOD = 200;
    const FEW = 10;
    h = await createHarness({ tenants: 2 });
    const [flooder, other] = h.tenants as [string, string];
    h.env.POIMEN_TENANT_WEIGHTS = `${other}=2`;
    // Admission off: this test is about Temporal's queue order, so the backlog must wait in Temporal, not in Kafka.
    h.env.POIMEN_INGEST_MAX_OPEN = '0';
    const ingester = await h.startIngester();
    // No worker yet: the flood becomes a backlog of 200 workflow tasks before the other tenant's 10 arrive, so
    // first come, first served would run the other tenant's last.
    for (let i = 0; i < FLOOD; i++) {
      await h.publish(h.dispatchValue(`a-${i}`), { topic: topics.dispatch(flooder) });
    }
    await waitFor(async () => (await started(ingester.metricsPort, flooder)) === FLOOD, {
      timeoutMs: 120_000,
      what: `the ingester to start all ${FLOOD} of the flooding tenant's dispatches`,
    });
    for (let i = 0; i < FEW; i++) {
      await h.publish(h.dispatchValue(`b-${i}`), { topic: topics.dispatch(other) });
    }
    await waitFor(async () => (await started(ingester.metricsPort, other)) === FEW, {
      timeoutMs: 60_000,
      what: `the ingester to start the other tenant's ${FEW} dispatches`,
    });

    // A small worker, so the backlog is served a few tasks at a time and the order is the server's.
    h.env.POIMEN_WORKER_MAX_WORKFLOW_TASKS = '2';
    h.env.POIMEN_WORKER_MAX_ACTIVITIES = '2';
    await h.startWorker();
    await waitFor(() => h.api.runs.size === FLOOD + FEW, {
      timeoutMs: 240_000,
      what: `all ${FLOOD + FEW} runs`,
    });

    const order = h.api.requests
      .filter((r) => r.answer === 201)
      .map((r) => (r.json as { dispatch_key: string }).dispatch_key);
    const otherPositions = order.map((k, i) => (k.startsWith('b-') ? i : -1)).filter((i) => i >= 0);
    expect(otherPositions).toHaveLength(FEW);
    // First come, first served puts the other tenant's 10 at positions 200–209, after all of the flood. Temporal
    // serves turns within each of the queue's four partitions, and this worker (one poller on the normal workflow
    // queue, two on the activity queue) can drain one partition after the others: the other tenant's tasks in
    // that one go first there, about three quarters through the whole (measured: 141–164; with one partition,
    // positions 0–14 every time). So: its first dispatch among the first few, and none after all of the flood.
    expect(Math.min(...otherPositions)).toBeLessThan(FEW);
    expect(Math.max(...otherPositions)).toBeLessThan(FLOOD);

    // Every one of the 210 starts, as Temporal holds it: its tenant as fairness key, and the configured weight
    // (0: not set, Temporal's default weight of 1).
    const starts = [
      ...Array.from({ length: FLOOD }, (_, i) => ({ tenant: flooder, key: `a-${i}`, weight: 0 })),
      ...Array.from({ length: FEW }, (_, i) => ({ tenant: other, key: `b-${i}`, weight: 2 })),
    ];
    const held = [];
    for (const { tenant, key } of starts) {
      const d = await h.client.workflow.getHandle(`dispatch:${tenant}:${key}`).describe();
      held.push({
        tenant,
        key,
        weight: d.priority?.fairnessWeight ?? 0,
        fairnessKey: d.priority?.fairnessKey,
      });
    }
    expect(held).toEqual(starts.map((s) => ({ ...s, fairnessKey: s.tenant })));
    await h.expectCommittedAtLogEnd();
  });
});

describe('admission per tenant (POIMEN_INGEST_TENANT_MAX_OPEN)', () => {
  test("a tenant at its bound of open dispatches waits in Kafka, uncommitted, while another tenant's dispatches flow; executions that close, completed or failed, let the rest in", async () => {
    const BOUND = 5;
    const FLOOD = 30;
    const FEW = 3;
    h = await createHarness({ tenants: 2 });
    const [flooder, other] = h.tenants as [string, string];
    h.env.POIMEN_INGEST_TENANT_MAX_OPEN = String(BOUND);
    // The flooding tenant's calls are held at the API: its started dispatches stay open until the test lets go.
    h.api.faultPolicy((key) => (key?.startsWith('a-') ? { kind: 'hold' } : undefined));
    await h.startWorker();
    const ingester = await h.startIngester();
    for (let i = 0; i < FLOOD; i++) {
      await h.publish(h.dispatchValue(`a-${i}`), { topic: topics.dispatch(flooder) });
    }
    await waitFor(() => h.api.heldCount === BOUND, {
      timeoutMs: 60_000,
      what: `${BOUND} of the flooding tenant's calls held at the API`,
    });
    for (let i = 0; i < FEW; i++) {
      await h.publish(h.dispatchValue(`b-${i}`), { topic: topics.dispatch(other) });
    }
    await waitFor(() => h.api.runs.size === FEW, {
      timeoutMs: 60_000,
      what: `the other tenant's ${FEW} runs while the flooding tenant is at its bound`,
    });

    // The other tenant went through while the flooding tenant stayed at its bound: the ingester started no more of
    // its records, and the rest of its backlog is in Kafka, not committed.
    const metrics = await fetch(`http://127.0.0.1:${ingester.metricsPort}/metrics`).then((r) => r.text());
    expect(
      metricValue(metrics, 'poimen_dispatch_records_total', { tenant: flooder, outcome: 'started' }),
    ).toBe(BOUND);
    expect(metricValue(metrics, 'poimen_ingest_tenant_open_dispatches', { tenant: flooder })).toBe(BOUND);
    const committed = async () =>
      (await h.offsets(flooder)).reduce((n, p) => n + Math.max(0, p.committed), 0);
    await waitFor(async () => (await committed()) === BOUND, {
      timeoutMs: 30_000,
      what: `the flooding tenant's committed offsets to cover exactly its ${BOUND} started records`,
    });
    expect(h.api.heldCount).toBe(BOUND);

    // From here the API refuses a third of the flood for good (422): those dispatches are dead-lettered and their
    // executions close failed, which must free their slots as a completion does, or the tenant would stop at its
    // bound after five of them.
    const refused = (key: string) => Number(key.slice(2)) >= 20;
    h.api.faultPolicy((key) =>
      key?.startsWith('a-') && refused(key) ? { kind: 'status', status: 422 } : undefined,
    );
    h.api.release();
    const settled = (key: string) =>
      h.api.runs.has(key) || h.api.requestsFor(key).some((r) => r.answer === 422);
    await waitFor(() => Array.from({ length: FLOOD }, (_, i) => `a-${i}`).every(settled), {
      timeoutMs: 120_000,
      what: `all ${FLOOD} of the flooding tenant's dispatches run or refused once its calls are answered`,
    });
    expect(h.api.requests.filter((r) => r.answer === 422).length).toBeGreaterThan(BOUND);
    await h.expectCommittedAtLogEnd();
    await waitFor(
      async () => {
        const text = await fetch(`http://127.0.0.1:${ingester.metricsPort}/metrics`).then((r) => r.text());
        return metricValue(text, 'poimen_ingest_tenant_open_dispatches', { tenant: flooder }) === 0;
      },
      { timeoutMs: 30_000, what: 'no dispatch of the flooding tenant counted open' },
    );
  });
});

describe('fair shares, with every admission setting at its default', () => {
  test("a lone tenant's burst starts beyond any share; beside an active tenant it waits in Kafka at its share, uncommitted and counted as lag, with the ingester ready, while the other flows; once the other is quiet it has the whole ingester again", async () => {
    const BURST = 40;
    const TRICKLE = 30;
    // The flooding tenant's held calls time out (RUNS_API_TIMEOUT_MS, 10 s) and are retried while the other tenant's
    // are answered: their failures are that tenant's, so the worker's breaker stays closed for the other.
    h = await createHarness({ tenants: 2 });
    const [flooder, other] = h.tenants as [string, string];
    // The flooding tenant's calls are held at the API: its started dispatches stay open until the test lets go.
    h.api.faultPolicy((key) => (key?.startsWith('a-') ? { kind: 'hold' } : undefined));
    const worker = await h.startWorker();
    const ingester = await h.startIngester();
    const burst = async (from: number) => {
      for (let i = from; i < from + BURST; i++) {
        await h.publish(h.dispatchValue(`a-${i}`), { topic: topics.dispatch(flooder) });
      }
    };

    // Alone, the tenant's whole burst is open at once: more than the budget any share of a quiet relay gives.
    // (Counted by the ingester, not by held calls: a call held past RUNS_API_TIMEOUT_MS is retried and held again.)
    const openOf = async (tenant: string) =>
      metricValue(
        await fetch(`http://127.0.0.1:${ingester.metricsPort}/metrics`).then((r) => r.text()),
        'poimen_ingest_tenant_open_dispatches',
        { tenant },
      );
    await burst(0);
    await waitFor(async () => (await started(ingester.metricsPort, flooder)) === BURST, {
      timeoutMs: 60_000,
      what: `the lone tenant's ${BURST} dispatches started at once`,
    });

    // The other tenant trickles: it is active, and the budget is shared. The flooding tenant's next burst waits.
    const trickle = (async () => {
      for (let i = 0; i < TRICKLE; i++) {
        await h.publish(h.dispatchValue(`b-${i}`), { topic: topics.dispatch(other) });
        await new Promise((r) => setTimeout(r, 500));
      }
    })();
    await waitFor(() => h.api.runs.size >= 2, { timeoutMs: 60_000, what: "the other tenant's first runs" });
    await burst(BURST);
    // While the other tenant is still trickling (15 s): the burst waits in Kafka, counted as lag, the process ready.
    const lag = async () =>
      metricValue(
        await fetch(`http://127.0.0.1:${ingester.metricsPort}/metrics`).then((r) => r.text()),
        'poimen_inbox_lag',
        { topic: topics.dispatch(flooder), partition: '0' },
      );
    await waitFor(async () => (await lag()) === BURST, {
      timeoutMs: 10_000,
      what: `the waiting burst counted as the flooding tenant's lag (${BURST})`,
    });
    expect(await started(ingester.metricsPort, flooder)).toBe(BURST);
    expect(await openOf(flooder)).toBe(BURST);
    expect((await fetch(`http://127.0.0.1:${ingester.metricsPort}/readyz`)).status).toBe(200);
    await trickle;
    // Still held at its share when the other tenant's last record is in: that tenant is active for 5 s from it.
    // (Not after the other's runs: on a busy machine they may end past that window, and then the flooding tenant
    // is alone again, rightly.)
    expect(await started(ingester.metricsPort, flooder)).toBe(BURST);
    await waitFor(() => h.api.runs.size === TRICKLE, {
      timeoutMs: 60_000,
      what: `the other tenant's ${TRICKLE} runs beside the flooding tenant's open dispatches`,
    });
    // The flooding tenant's calls timed out meanwhile (held past 10 s) and opened its own breaker, not the worker's.
    const workerLog = fs.readFileSync(worker.logFile, 'utf8');
    expect(workerLog).toContain("a tenant's runs API circuit breaker open");
    expect(workerLog).not.toContain('"msg":"runs API circuit breaker open"');

    // The other tenant quiet for the active window: the flooding tenant is alone again and its rest starts.
    await waitFor(async () => (await started(ingester.metricsPort, flooder)) === 2 * BURST, {
      timeoutMs: 60_000,
      what: "the flooding tenant's second burst started once it was alone again",
    });
    h.api.faultPolicy(undefined);
    h.api.release();
    await waitFor(() => h.api.runs.size === TRICKLE + 2 * BURST, {
      timeoutMs: 120_000,
      what: 'every dispatch run once the calls are answered',
    });
    await h.expectCommittedAtLogEnd();
  });
});
