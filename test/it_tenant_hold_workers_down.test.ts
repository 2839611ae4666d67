/**
 * A pause while every worker is down (a deploy, a crash loop): the calls of the paused tenant sit in Temporal's
 * retry backoff, no attempt runs to bring the pause back, and their budget ends at the server. Back up, the workers
 * hold them rather than dead-letter them (contract/workflow.ts, BUDGET_SPENT_PAUSED_PATCH; docs/design.md, "Pausing
 * a tenant"); `dispatch status` says held; `tenant resume` runs each once. Real Kafka and Temporal, the CLI as an
 * operator runs it.
 */
import { topics } from '../src/contract';
import { BUDGET_SPENT_PAUSED_PATCH } from '../src/contract/workflow';
import { runCli } from './support/cli';
import { readTopicToEnd } from './support/dlqTopic';
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

jest.setTimeout(300_000);

let h: Harness;
afterEach(async () => {
  await h?.cleanup();
});

const KEYS = ['down-0', 'down-1'];
/** The dispatches' budget: the workers stay down past it. */
const BUDGET_MS = 15_000;

async function cli(args: string[]): Promise<string> {
  const r = await runCli(args, h.env, 120_000);
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
  return r.stdout;
}

test('paused while every worker is down past the budget: held, not dead-lettered; resumed, each runs once', async () => {
  h = await createHarness({ env: { RETRY_MAX_DURATION_MS: String(BUDGET_MS) } });
  const failing = new Set(KEYS);
  h.api.faultPolicy((key) => (key && failing.has(key) ? { kind: 'status', status: 503 } : undefined));
  await h.startIngester();
  const first = await h.startWorker('worker-1');
  for (const key of KEYS) await h.publish(h.dispatchValue(key), { topic: topics.dispatch(h.tenant) });
  await waitFor(() => KEYS.every((k) => h.api.requestsFor(k).length >= 1), {
    timeoutMs: 60_000,
    what: 'an attempt of every call',
  });

  // The only worker goes; the tenant is paused while the calls wait in Temporal's backoff, past their budget.
  await first.stop();
  await cli(['tenant', 'pause', h.tenant, '--reason', 'deploy']);
  const posts = KEYS.map((k) => h.api.requestsFor(k).length);
  // Down until the server has ended each call on its budget (which starts with the execution).
  const handles = KEYS.map((k) => h.client.workflow.getHandle(h.wfId(k)));
  const started = Math.max(
    ...(await Promise.all(handles.map(async (x) => (await x.describe()).startTime.getTime()))),
  );
  await new Promise((r) => setTimeout(r, Math.max(0, started + BUDGET_MS + 3_000 - Date.now())));

  await h.startWorker('worker-2');
  for (const key of KEYS) {
    const status = await waitFor(
      async () => {
        const s = JSON.parse(
          await cli(['dispatch', 'status', '--tenant', h.tenant, '--key', key, '--json']),
        ) as { status: string; held: { reason: string } | null; attempt: number | null };
        return s.held || s.status !== 'RUNNING' ? s : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1_000, what: `${key} held or ended` },
    );
    expect(status).toMatchObject({ status: 'RUNNING', held: { reason: 'deploy' } });
    expect(status.attempt).toBe(h.api.requestsFor(key).length);
  }
  expect(KEYS.map((k) => h.api.requestsFor(k).length)).toEqual(posts);
  // Held by the look after the budget's end, not by an attempt that found the pause.
  for (const x of handles) {
    const events = (await x.fetchHistory()).events ?? [];
    const patches = events
      .map((e) => e.markerRecordedEventAttributes?.details?.['patch-data']?.payloads?.[0]?.data)
      .map((d) => (d ? Buffer.from(d).toString('utf8') : ''));
    expect(patches.some((p) => p.includes(BUDGET_SPENT_PAUSED_PATCH))).toBe(true);
  }

  failing.clear();
  expect(await cli(['tenant', 'resume', h.tenant])).toContain(`woke ${KEYS.length} running dispatch(es)`);
  await waitFor(() => KEYS.every((k) => h.api.runs.has(k)), {
    timeoutMs: 60_000,
    what: 'the held calls to run',
  });
  for (const key of KEYS) {
    expect(h.api.requestsFor(key).filter((r) => r.answer === 201)).toHaveLength(1);
  }
  expect(await readTopicToEnd(h.kafka, topics.dlq(h.tenant))).toEqual([]);
  await h.expectCommittedAtLogEnd(60_000);
});
