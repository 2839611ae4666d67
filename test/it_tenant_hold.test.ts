/**
 * A pause holds a tenant's calls already under way (contract §7; docs/design.md, "Pausing a tenant"): on every
 * worker, within seconds, no further request goes out and neither the retry budget nor the attempts are spent; the
 * hold outlives a worker's restart and the budget; `dispatch status` shows it; `tenant resume` wakes the held calls,
 * which go on with what they had left, each making one run, and one that fails on is dead-lettered with every
 * attempt of both calls counted. Real Kafka and Temporal, two ingesters and two workers, the CLI as an operator
 * runs it.
 */
import { topics } from '../src/contract';
import { runCli } from './support/cli';
import { type RelayProcess, metricValue } from './support/relay';
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

jest.setTimeout(300_000);

let h: Harness;
afterEach(async () => {
  await h?.cleanup();
});

const N = 6;
/** The budget of this test's dispatches: the pause outlasts it by half. */
const BUDGET_MS = 20_000;

async function cli(args: string[]): Promise<string> {
  const r = await runCli(args, h.env, 120_000);
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
  return r.stdout;
}

const postsOf = (prefix: string) =>
  h.api.requests.filter((r) =>
    (r.json as { dispatch_key?: string } | undefined)?.dispatch_key?.startsWith(prefix),
  );

async function pausedGauge(p: RelayProcess, tenant: string): Promise<number | undefined> {
  return metricValue(await p.metrics(), 'poimen_tenant_paused', { tenant });
}

test("a pause holds the tenant's calls under way on every worker without spending their budget; resume goes on", async () => {
  h = await createHarness({ tenants: 2, partitions: 2, env: { RETRY_MAX_DURATION_MS: String(BUDGET_MS) } });
  const [paused, other] = h.tenants as [string, string];
  const failing = new Set(Array.from({ length: N }, (_, i) => `a-${i}`));
  h.api.faultPolicy((key) => (key && failing.has(key) ? { kind: 'status', status: 503 } : undefined));

  await h.startIngester('ingest-1');
  await h.startIngester('ingest-2');
  const workers = [await h.startWorker('worker-1'), await h.startWorker('worker-2')];
  for (let i = 0; i < N; i++) {
    await h.publish(h.dispatchValue(`a-${i}`), { topic: topics.dispatch(paused), key: `k${i}` });
  }
  // Every call is under way and failing: each has made an attempt.
  await waitFor(() => [...failing].every((k) => h.api.requestsFor(k).length >= 1), {
    timeoutMs: 60_000,
    what: 'an attempt of every call',
  });

  await cli(['tenant', 'pause', paused, '--reason', 'API migration']);
  const pausedAt = Date.now();
  for (const w of workers) {
    await waitFor(async () => (await pausedGauge(w, paused)) === 1, {
      timeoutMs: 10_000,
      what: 'the workers to know',
    });
  }
  // An attempt already sent is answered; one waiting on the breaker ends at its next heartbeat (5 s).
  await new Promise((r) => setTimeout(r, 7_000));
  const sent = postsOf('a-').length;

  // A restarted worker reads the pause before it takes a call; the other tenant's calls run meanwhile.
  await workers[0]!.stop();
  workers[0] = await h.startWorker('worker-3');
  for (let i = 0; i < N; i++) {
    await h.publish(h.dispatchValue(`b-${i}`), { topic: topics.dispatch(other), key: `k${i}` });
  }
  await waitFor(() => [...h.api.runs.keys()].filter((k) => k.startsWith('b-')).length === N, {
    timeoutMs: 60_000,
    what: "the other tenant's runs",
  });
  // Held past the whole budget: without the hold, every call would be dead-lettered by now.
  const heldUntil = pausedAt + BUDGET_MS * 1.5;
  await new Promise((r) => setTimeout(r, Math.max(0, heldUntil - Date.now())));
  expect(postsOf('a-').length).toBe(sent);

  const status = JSON.parse(
    await cli(['dispatch', 'status', '--tenant', paused, '--key', 'a-0', '--json']),
  ) as { status: string; held: { paused_since: string; reason: string } | null; attempt: number };
  expect(status).toMatchObject({ status: 'RUNNING', held: { reason: 'API migration' } });
  expect(status.attempt).toBe(h.api.requestsFor('a-0').length);
  const text = await cli(['dispatch', 'status', '--tenant', paused, '--key', 'a-0']);
  expect(text).toMatch(/^held +tenant paused since \S+ \(API migration\)/m);

  // Resumed: five calls now succeed, one fails on to the end of what its budget had left.
  failing.clear();
  failing.add('a-5');
  const resumed = await cli(['tenant', 'resume', paused]);
  expect(resumed).toContain(`woke ${N} running dispatch(es) of ${paused}`);
  await waitFor(() => [0, 1, 2, 3, 4].every((i) => h.api.runs.has(`a-${i}`)), {
    timeoutMs: 60_000,
    what: 'the held calls to run',
  });
  for (let i = 0; i < 5; i++) {
    expect(h.api.requestsFor(`a-${i}`).filter((r) => r.answer === 201)).toHaveLength(1);
  }
  const dead = await h.readDlq(1, 90_000);
  expect(dead.map((d) => d.dispatch_key)).toEqual(['a-5']);
  const posts = h.api.requestsFor('a-5').length;
  expect(dead[0]).toMatchObject({ retry_count: posts, http_status: 503 });
  expect(dead[0]!.attempts?.map((a) => a.attempt)).toEqual(Array.from({ length: posts }, (_, i) => i + 1));
  expect(dead[0]!.error).toMatch(/retry budget of 20 s spent/);
  await h.expectCommittedAtLogEnd(60_000);
});
