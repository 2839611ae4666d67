/**
 * `dlq replay --rate` and `--report` on the real stack. Thousands of dead letters replayed at a rate reach the
 * runs API (a node:http server) through the relay no faster than the rate plus its stated burst; the report
 * holds one line per record, written as the replay goes, so a replay killed part-way leaves a report listing
 * what it had replayed, less at most the one send under way at the kill — checked against what is on `.dispatch`
 * (the `poimen-replay-of` header).
 * The dead letters are written straight to the DLQ topic as the relay writes them (§6 records of refused
 * dispatches), so thousands cost no run each before the replay.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Admin } from 'kafkajs';
import { buildDlqRecord, topics } from '../src/contract';
import { EXIT } from '../src/errors';
import type { ReportLine } from '../src/ops/dlqReport';
import { type CliResult, cliEnv, runCli, startCli } from './support/cli';
import { readAll, republished } from './support/dlqScenario';
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

// The relay may run slower than the rate on a busy machine: the runs are awaited while they progress.
jest.setTimeout(1_800_000);

let h: Harness | undefined;
let admin: Admin | undefined;
let dir: string | undefined;
afterEach(async () => {
  await admin?.disconnect();
  admin = undefined;
  await h?.cleanup();
  h = undefined;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function json<T>(res: CliResult): T {
  if (res.code !== 0) throw new Error(`exit ${res.code}: ${res.stderr}`);
  return JSON.parse(res.stdout) as T;
}

/** Writes dead letters of refused dispatches (and of malformed ones where `malformed(i)`) to the DLQ topic. */
async function writeDeadLetters(hh: Harness, n: number, malformed: (i: number) => boolean = () => false) {
  const ids: string[] = [];
  const batch = 500;
  for (let from = 0; from < n; from += batch) {
    const messages = Array.from({ length: Math.min(batch, n - from) }, (_, j) => {
      const i = from + j;
      const key = `k-${i}`;
      const bad = malformed(i);
      const record = buildDlqRecord({
        id: crypto.randomUUID(),
        timestamp: Date.now(),
        type: bad ? 'malformed_dispatch' : 'dispatch_failure',
        tenant: hh.tenant,
        dispatchKey: bad ? null : key,
        error: bad
          ? 'value is not valid JSON: unexpected end'
          : 'runs API answered 503: upstream unavailable',
        httpStatus: bad ? null : 503,
        source: { topic: topics.dispatch(hh.tenant), partition: 0, offset: String(i), timestamp: '0' },
        value: bad ? '{"broken": ' : hh.dispatchValue(key),
      });
      ids.push(record.id);
      return { value: JSON.stringify(record), headers: { 'dlq-type': record.type } };
    });
    await hh.producer.send({ topic: topics.dlq(hh.tenant), acks: -1, messages });
  }
  return ids;
}

/**
 * The most records beyond `rate` per second in any span of `times` (sorted ms): max over i ≤ j of
 * (j − i + 1) − rate·(t_j − t_i)/1000. A replay paced at `rate` with a burst of b has this ≤ b.
 */
function excessOverRate(times: number[], rate: number): number {
  let best = -Infinity;
  let minBefore = Infinity; // min over i of (i − 1) − rate·t_i/1000, i.e. f(i) − 1
  times.forEach((t, k) => {
    const f = k - (rate * t) / 1000;
    minBefore = Math.min(minBefore, f - 1);
    best = Math.max(best, f - minBefore);
  });
  return best;
}

const readReport = (file: string): ReportLine[] =>
  fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as ReportLine);

test('thousands replayed at --rate reach the runs API no faster than the rate plus its burst', async () => {
  const n = 2000;
  const rate = 25;
  h = await createHarness();
  await h.startWorker();
  await h.startIngester();
  admin = h.kafka.admin();
  await admin.connect();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'it-dlq-rate-'));
  const report = path.join(dir, 'report.jsonl');
  await writeDeadLetters(h, n);

  const started = Date.now();
  const summary = json<{ replayed: number }>(
    await runCli(
      ['dlq', 'replay', '--tenant', h.tenant, '--rate', String(rate), '--report', report, '--json'],
      cliEnv(),
      500_000,
    ),
  );
  const tookMs = Date.now() - started;
  expect(summary.replayed).toBe(n);
  // Every record re-published once, and the replay took at least (n − 1)/rate seconds.
  const replayed = (await readAll(h, admin, topics.dispatch(h.tenant))).filter(
    (r) => r.headers['poimen-replay-of'],
  );
  const sent = replayed.map((r) => r.timestampMs).sort((x, y) => x - y);
  expect(sent).toHaveLength(n);
  expect(tookMs / 1000).toBeGreaterThanOrEqual((n - 1) / rate);
  // The stated burst (docs/cli.md): over any span s, at most rate·s + 1 sent (Kafka's timestamps are taken when
  // kafkajs encodes the request, a little after the pacing: one second's worth covers that).
  const sentExcess = excessOverRate(sent, rate);

  // Every run reaches the API; on a busy machine the relay may be slower than the rate: wait while it progresses.
  let seen = -1;
  while (h.api.runs.size < n) {
    if (h.api.runs.size === seen) throw new Error(`the runs API got no new run for 60 s (${seen} of ${n})`);
    seen = h.api.runs.size;
    await h.api.waitFor((api) => api.runs.size > seen, 60_000, `run ${seen + 1}`).catch(() => undefined);
  }
  const arrived = h.api.requests.map((r) => r.receivedAtMs).sort((x, y) => x - y);
  // The relay's latency of each record, Kafka timestamp to its first call: a pause of the relay (a busy machine)
  // bunches what it held, so the API's burst is stated with the longest of them (docs/cli.md).
  const firstCall = new Map<string, number>();
  for (const r of h.api.requests) {
    const key = (r.json as { dispatch_key?: string } | undefined)?.dispatch_key;
    if (key !== undefined && !firstCall.has(key)) firstCall.set(key, r.receivedAtMs);
  }
  const latencies = replayed.map((r) => {
    const key = (JSON.parse(r.value!.toString()) as { dispatch_key: string }).dispatch_key;
    return (firstCall.get(key)! - r.timestampMs) / 1000;
  });
  const measured = {
    replaySeconds: tookMs / 1000,
    sentExcess,
    apiExcess: excessOverRate(arrived, rate),
    apiSpanSeconds: (arrived.at(-1)! - arrived[0]!) / 1000,
    relayLatencyMaxSeconds: Math.max(...latencies),
  };
  process.stderr.write(`dlq replay --rate ${rate} of ${n}: ${JSON.stringify(measured)}\n`);
  expect(latencies.every((l) => Number.isFinite(l) && l >= 0)).toBe(true);
  // The stated bursts (docs/cli.md): over any span s, at most rate·s + 1 sent, and at most rate·(s + d) + rate at
  // the runs API, d the relay's longest latency: records sent within s + d of each other may arrive within s.
  expect(measured.sentExcess).toBeLessThanOrEqual(rate);
  expect(measured.apiExcess).toBeLessThanOrEqual(rate * (1 + measured.relayLatencyMaxSeconds));
  expect(readReport(report).filter((l) => l.outcome === 'replayed')).toHaveLength(n);
});

test('--report: one line per record as it goes; a replay killed part-way lists what it replayed', async () => {
  h = await createHarness();
  admin = h.kafka.admin();
  await admin.connect();
  const a = admin;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'it-dlq-report-'));
  const report = path.join(dir, 'report.jsonl');
  const n = 40;
  const ids = await writeDeadLetters(h, n, (i) => i % 10 === 3);
  const lines = () => (fs.existsSync(report) ? readReport(report).length : 0);

  const run = startCli(['dlq', 'replay', '--tenant', h.tenant, '--rate', '4', '--report', report], cliEnv());
  await waitFor(() => lines() >= 12, { what: 'the replay to report twelve records' });
  run.child.kill('SIGKILL');
  expect((await run.result).code).toBeNull();

  const killed = readReport(report);
  const replayedIds = (lines: ReportLine[]) =>
    lines.filter((l) => l.outcome === 'replayed').map((l) => l.id!);
  // The report's lines follow the DLQ order; the not-replayable ones met are skipped lines.
  expect(killed.map((l) => l.id)).toEqual(ids.slice(0, killed.length));
  // The guarantee (docs/cli.md): every line happened — each record reported replayed is on .dispatch, once — and
  // at most one record is unaccounted for: the one whose send was under way at the kill (published, its line not
  // yet written), which can only be the record right after the report's last line.
  const onDispatch = await republished(h, a);
  expect(replayedIds(killed).map((id) => [id, onDispatch[id]])).toEqual(
    replayedIds(killed).map((id) => [id, 1]),
  );
  const unreported = Object.keys(onDispatch).filter((id) => !replayedIds(killed).includes(id));
  const inFlight = unreported.length === 0 ? undefined : ids[killed.length];
  expect(unreported).toEqual(inFlight === undefined ? [] : [inFlight]);
  expect(Object.values(onDispatch).every((c) => c === 1)).toBe(true);
  expect(killed.length).toBeLessThan(n);
  for (const l of killed) {
    const bad = Number(l.offset) % 10 === 3;
    expect(l).toMatchObject(
      bad
        ? { outcome: 'skipped', reason: 'not_replayable', type: 'malformed_dispatch', dispatch_key: null }
        : { outcome: 'replayed', type: 'dispatch_failure', dispatch_key: `k-${l.offset}` },
    );
  }

  // Run again with the same report: it appends what the resumed run does, and the whole is every record.
  const rerun = await waitFor(
    async () => {
      const res = await runCli(
        ['dlq', 'replay', '--tenant', h!.tenant, '--report', report, '--json'],
        cliEnv(),
      );
      return res.code === EXIT.busy ? false : json<{ replayed: number; notReplayable: number }>(res);
    },
    { what: 'a replay accepted after the killed one', intervalMs: 500 },
  );
  const all = readReport(report);
  expect(all.slice(0, killed.length)).toEqual(killed);
  const counts = Object.fromEntries(Object.entries(await republished(h, a)));
  const reported: Record<string, number> = {};
  for (const id of replayedIds(all)) reported[id] = (reported[id] ?? 0) + 1;
  // The record in flight at the kill was not recorded as handled: the resumed run sends it again and reports that.
  if (inFlight !== undefined) reported[inFlight] = (reported[inFlight] ?? 0) + 1;
  expect(reported).toEqual(counts);
  const replayable = ids.filter((_, i) => i % 10 !== 3);
  expect(Object.keys(reported).sort()).toEqual([...replayable].sort());
  const resumed = all.slice(killed.length);
  expect(rerun.notReplayable).toBe(resumed.filter((l) => l.reason === 'not_replayable').length);
  // The resumed run reads on from the first record not yet handled (the first not replayable one): the records
  // replayed past it are reported as skipped, already handled (one sent but not yet recorded at the kill is
  // replayed again instead, and reported so).
  const handledAgain = resumed.filter((l) => l.reason === 'already_handled').map((l) => l.id!);
  expect(handledAgain.every((id) => replayedIds(killed).includes(id))).toBe(true);
  for (const id of replayedIds(killed).filter((x) => ids.indexOf(x) > 3))
    expect({ id, again: handledAgain.includes(id) || replayedIds(resumed).includes(id) }).toEqual({
      id,
      again: true,
    });
});

test('--report that fails to write mid-way: stops at once, one line naming the file, nothing more sent', async () => {
  h = await createHarness();
  admin = h.kafka.admin();
  await admin.connect();
  const ids = await writeDeadLetters(h, 5);
  // /dev/full opens for appending like a file and refuses every write (ENOSPC): a disk that filled up.
  const res = await runCli(
    ['dlq', 'replay', '--tenant', h.tenant, '--report', '/dev/full', '--json'],
    cliEnv(),
  );
  const stderr = res.stderr.trim().split('\n');
  // The first record was sent before its line failed: the error names it, and no record was sent after it.
  expect({
    code: res.code,
    stdout: res.stdout,
    last: stderr.at(-1),
    sent: await republished(h, admin),
  }).toEqual({
    code: EXIT.usage,
    stdout: '',
    last: expect.stringMatching(/^poimen-relay: .*--report = "\/dev\/full": cannot be written \(ENOSPC\)/),
    sent: { [ids[0]!]: 1 },
  });
  expect(stderr.at(-1)).toContain(ids[0]);
  expect(res.stderr).not.toMatch(/\n\s+at /);
});
