/**
 * Contract §6 `attempts`: every runs-API attempt of a dead-lettered dispatch, oldest first, with its time, HTTP
 * status (null for a timeout or a transport error), error excerpt and duration; the same list in `dispatch status`.
 * On the real stack: the history travels between attempts in Temporal's heartbeat details, through a worker killed
 * mid-attempt.
 */
import type { DlqRecord } from '../src/contract';
import { defaultPayloadConverter } from '@temporalio/common';
import { NO_OUTCOME } from '../src/contract/attempts';
import { type CliResult, cliEnv, runCli } from './support/cli';
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

let h: Harness | undefined;
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});

async function status(tenant: string, key: string, json: boolean): Promise<CliResult> {
  const res = await runCli(
    ['dispatch', 'status', '--tenant', tenant, '--key', key, ...(json ? ['--json'] : [])],
    cliEnv(),
    120_000,
  );
  if (res.code !== 0) throw new Error(`dispatch status exited ${res.code}: ${res.stderr}`);
  return res;
}

function expectTimesInOrder(record: DlqRecord): void {
  const times = record.attempts!.map((a) => Date.parse(a.at!));
  expect(times.every((t, i) => Number.isFinite(t) && (i === 0 || t >= times[i - 1]!))).toBe(true);
}

test('a dispatch answered 503, 503, timeout, 422 has exactly those four attempts, in order, in its dead letter and in dispatch status', async () => {
  // Attempt 3 is a 3 s delay that must time out; the shipped 10 s attempt timeout would wait it out.
  h = await createHarness({ env: { RUNS_API_TIMEOUT_MS: '1000' } });
  h.api.scriptFor(
    'four',
    { kind: 'status', status: 503, body: 'upstream busy' },
    { kind: 'status', status: 503, body: 'still busy' },
    { kind: 'delay', ms: 3000 },
    { kind: 'status', status: 422, body: '{"error":"unknown workflow_ref"}' },
  );
  await h.startWorker();
  await h.startIngester();
  await h.publish(h.dispatchValue('four'));

  const [record] = await h.readDlq(1);
  expect(record!.retry_count).toBe(4);
  expect(record!.attempts).toEqual([
    expect.objectContaining({
      attempt: 1,
      http_status: 503,
      error: expect.stringMatching(/503.*upstream busy/),
    }),
    expect.objectContaining({
      attempt: 2,
      http_status: 503,
      error: expect.stringMatching(/503.*still busy/),
    }),
    expect.objectContaining({
      attempt: 3,
      http_status: null,
      error: expect.stringMatching(/timed out|timeout/i),
    }),
    expect.objectContaining({
      attempt: 4,
      http_status: 422,
      error: expect.stringMatching(/unknown workflow_ref/),
    }),
  ]);
  expectTimesInOrder(record!);
  // The timed-out attempt lasted the HTTP timeout; the others the double's answer time.
  expect(record!.attempts![2]!.duration_ms).toBeGreaterThanOrEqual(1000);
  expect(record!.attempts!.every((a) => typeof a.duration_ms === 'number' && a.duration_ms >= 0)).toBe(true);
  expect(record!).not.toHaveProperty('attempts_omitted');

  const shown = JSON.parse((await status(h.tenant, 'four', true)).stdout) as { attempts: unknown };
  expect(shown.attempts).toEqual(record!.attempts);
  const table = (await status(h.tenant, 'four', false)).stdout;
  expect(table).toMatch(/attempts/);
  // One row per attempt, in order: number, time, status (- for the timeout), duration, error.
  const rows = table.split('\n').filter((l) => /^\s+\d+\s+\d{4}-/.test(l));
  expect(rows).toHaveLength(4);
  expect(rows[0]).toMatch(/^\s*1\s+\S+\s+503\s+\d+ ms\s+runs API answered 503/);
  expect(rows[1]).toMatch(/^\s*2\s+\S+\s+503\s+\d+ ms\s+runs API answered 503/);
  expect(rows[2]).toMatch(/^\s*3\s+\S+\s+-\s+\d+ ms\s+.*(timed out|timeout)/i);
  expect(rows[3]).toMatch(/^\s*4\s+\S+\s+422\s+\d+ ms\s+/);
  await h.expectCommittedAtLogEnd();
});

test('a worker killed mid-attempt leaves that attempt in the history, with its start time and "no outcome recorded"', async () => {
  h = await createHarness();
  h.api.scriptFor(
    'lost',
    { kind: 'status', status: 503, body: 'busy' },
    { kind: 'hold' },
    { kind: 'status', status: 422, body: 'refused' },
  );
  const first = await h.startWorker('worker-1');
  await h.startIngester();
  await h.publish(h.dispatchValue('lost'));
  await h.api.waitFor(
    (a) => a.inFlight === 1 && a.requestsFor('lost').length === 2,
    60_000,
    'attempt 2 held',
  );

  // While attempt 2 is held, the running dispatch shows attempt 1 (attempt 2 is `attempt`, running).
  const running = JSON.parse((await status(h.tenant, 'lost', true)).stdout) as {
    attempts: { attempt: number; http_status: number | null }[];
  };
  expect(running.attempts.map((a) => [a.attempt, a.http_status])).toEqual([[1, 503]]);

  // Attempt 2 has told Temporal it began (its heartbeat as it called) before its worker dies.
  await waitFor(
    async () => {
      const desc = await h!.client.workflow.getHandle(h!.wfId('lost')).describe();
      const beat = desc.raw.pendingActivities?.[0]?.heartbeatDetails?.payloads?.[0];
      const details = beat
        ? defaultPayloadConverter.fromPayload<{ current?: { attempt: number } }>(beat)
        : undefined;
      return details?.current?.attempt === 2;
    },
    { what: "attempt 2's heartbeat" },
  );
  await first.kill();
  h.api.release();
  // The heartbeat timeout (attempt timeout + 20 s) ends the lost attempt; another worker makes attempt 3.
  await h.startWorker('worker-2');
  const [record] = await h.readDlq(1, 120_000);
  expect(record!.retry_count).toBe(3);
  expect(record!.attempts).toEqual([
    expect.objectContaining({ attempt: 1, http_status: 503 }),
    { attempt: 2, at: expect.any(String), http_status: null, error: NO_OUTCOME, duration_ms: null },
    expect.objectContaining({ attempt: 3, http_status: 422, error: expect.stringMatching(/refused/) }),
  ]);
  expectTimesInOrder(record!);
  const held = h.api.requestsFor('lost')[1]!;
  // The lost attempt's time is when it began, a little before its request reached the API.
  expect(Math.abs(Date.parse(record!.attempts![1]!.at!) - held.receivedAtMs)).toBeLessThan(5_000);
  await h.expectCommittedAtLogEnd();
});
