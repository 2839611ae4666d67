/**
 * `dlq redrive` on the real stack: a runs API that answers 503 until it recovers dead-letters two dispatches; a
 * redrive before they are --after old re-publishes nothing; after the API recovers, a redrive re-publishes both
 * through the replay path, with the redrive count in the `poimen-redrive-count` header: the one the API now
 * takes reaches it with exactly one 201, the one it still refuses is dead-lettered again carrying the count, and
 * with --max used up that dead letter stays put (pending in the backlog, never re-published). Another tenant's
 * dead letters, which nothing redrives, stay as they were. A redriven dispatch whose record retention has deleted
 * before it fails again keeps its count all the same (the start memo carries it), so --max still ends its redrives.
 */
import type { Admin } from 'kafkajs';
import { type DlqRecord, REDRIVE_COUNT_HEADER, buildDlqRecord, topics } from '../src/contract';
import { dlqBacklog } from '../src/ops/dlq';
import { type CliResult, cliEnv, runCli } from './support/cli';
import { readAll, readDeadLetterStore, republished } from './support/dlqScenario';
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

jest.setTimeout(300_000);

let h: Harness | undefined;
let admin: Admin | undefined;
afterEach(async () => {
  await admin?.disconnect();
  admin = undefined;
  await h?.cleanup();
  h = undefined;
});

interface Summary {
  examined: number;
  replayed: number;
  notDue: number;
  redrivesSpent: number;
  notReplayable: number;
}

function json<T>(res: CliResult): T {
  if (res.code !== 0) throw new Error(`exit ${res.code}: ${res.stderr}`);
  return JSON.parse(res.stdout) as T;
}

const redrive = async (tenant: string, ...args: string[]): Promise<Summary> =>
  json<Summary>(await runCli(['dlq', 'redrive', '--tenant', tenant, '--json', ...args], cliEnv(), 120_000));

async function dlqOf(hh: Harness, tenant: string, expected: number): Promise<DlqRecord[]> {
  return (await readDeadLetterStore(hh, topics.dlq(tenant), expected)).map((s) => s.record!);
}

test('redrive after recovery: one 201 for the recovered dispatch; the one still failing stays put at --max', async () => {
  // Dead-letter fast: two attempts, a second apart, and the dispatch is the DLQ's.
  h = await createHarness({ tenants: 2, env: { RETRY_MAX_ATTEMPTS: '2', POIMEN_DLQ_REFRESH_MS: '500' } });
  const hh = h;
  const [tenant, other] = hh.tenants as [string, string];
  let down = true;
  // The API is down for everything; once it recovers, it still refuses `stays` (its own outage goes on).
  hh.api.faultPolicy((key) => (down || key === 'stays' ? { kind: 'status', status: 503 } : undefined));
  await hh.startWorker();
  await hh.startIngester();
  admin = hh.kafka.admin();
  await admin.connect();
  const a = admin;

  await hh.publish(hh.dispatchValue('recovers'));
  await hh.publish(hh.dispatchValue('stays'));
  await hh.publish(hh.dispatchValue('untouched'), { topic: topics.dispatch(other) });
  const first = await dlqOf(hh, tenant, 2);
  expect(first.map((r) => [r.dispatch_key, r.type, r.http_status])).toEqual(
    expect.arrayContaining([
      ['recovers', 'dispatch_failure', 503],
      ['stays', 'dispatch_failure', 503],
    ]),
  );
  await dlqOf(hh, other, 1);

  // Not an hour old yet: nothing re-published, both still pending.
  expect(await redrive(tenant, '--after', '1h', '--max', '1')).toMatchObject({
    examined: 2,
    replayed: 0,
    notDue: 2,
  });
  expect(await republished(hh, a)).toEqual({});

  down = false;
  expect(await redrive(tenant, '--after', '0s', '--max', '1')).toMatchObject({ examined: 2, replayed: 2 });
  // Re-published through the replay path: each dead letter once, its redrive count 1.
  const dispatched = await readAll(hh, a, topics.dispatch(tenant));
  const redriven = dispatched.filter((s) => s.headers['poimen-replay-of'] !== undefined);
  expect(redriven.map((s) => s.headers[REDRIVE_COUNT_HEADER])).toEqual(['1', '1']);
  expect(await republished(hh, a)).toEqual(Object.fromEntries(first.map((r) => [r.id, 1])));

  // The recovered dispatch completes: exactly one 201 at the API, after the 503s.
  await waitFor(
    async () =>
      (await hh.client.workflow.getHandle(hh.wfId('recovers')).describe()).status.name === 'COMPLETED',
    { what: 'the redriven dispatch to complete' },
  );
  const answers = hh.api.requestsFor('recovers').map((r) => r.answer);
  expect(answers.filter((s) => s === 201)).toHaveLength(1);
  expect(answers.at(-1)).toBe(201);

  // The one still failing is dead-lettered again, its redrive count visible in the dead letter.
  const second = await dlqOf(hh, tenant, 3);
  const again = second[2]!;
  expect(again.dispatch_key).toBe('stays');
  expect(again.source.headers[REDRIVE_COUNT_HEADER]).toBe('1');
  const listed = await runCli(['dlq', 'list', '--tenant', tenant], cliEnv(), 120_000);
  expect(listed.code).toBe(0);
  expect(listed.stdout.split('\n').find((l) => l.startsWith(again.id))).toContain('redriven 1x');

  // --max 1 is used up: it stays put, pending in the backlog, and is never re-published.
  expect(await redrive(tenant, '--after', '0s', '--max', '1')).toMatchObject({
    examined: 1,
    replayed: 0,
    redrivesSpent: 1,
  });
  expect(await redrive(tenant, '--after', '0s', '--max', '1')).toMatchObject({
    replayed: 0,
    redrivesSpent: 1,
  });
  expect((await dlqBacklog(a, topics.dlq(tenant), Date.now())).lag).toBe(1);
  expect(Object.keys(await republished(hh, a))).toHaveLength(2);
  expect(hh.api.requestsFor('stays').some((r) => r.answer === 201)).toBe(false);

  // The other tenant has no redrive: its dead letter is pending, nothing re-published, no run made.
  expect((await dlqBacklog(a, topics.dlq(other), Date.now())).lag).toBe(1);
  const otherDispatched = await readAll(hh, a, topics.dispatch(other));
  expect(otherDispatched.filter((s) => s.headers['poimen-replay-of'] !== undefined)).toEqual([]);
  expect(hh.api.requestsFor('untouched').some((r) => r.answer === 201)).toBe(false);
  await hh.expectCommittedAtLogEnd();
});

test('a redriven record that retention deletes before the dispatch fails again still counts toward --max', async () => {
  // Two attempts 5 s apart: the window in which the redriven record is deleted, before its dead letter is written.
  h = await createHarness({
    env: { RETRY_MAX_ATTEMPTS: '2', RETRY_INITIAL_INTERVAL_MS: '5000', POIMEN_DLQ_REFRESH_MS: '500' },
  });
  const hh = h;
  const [tenant] = hh.tenants as [string];
  hh.api.faultPolicy(() => ({ kind: 'status', status: 503 }));
  await hh.startWorker();
  await hh.startIngester();
  admin = hh.kafka.admin();
  await admin.connect();
  const a = admin;

  await hh.publish(hh.dispatchValue('gone'));
  await dlqOf(hh, tenant, 1);
  expect(await redrive(tenant, '--after', '0s', '--max', '1')).toMatchObject({ replayed: 1 });
  // The redriven run's first attempt has been made: delete every record of the topic, as retention would.
  await waitFor(async () => hh.api.requestsFor('gone').length >= 3, {
    what: "the redriven run's first attempt",
  });
  const topic = topics.dispatch(tenant);
  const ends = await a.fetchTopicOffsets(topic);
  await a.deleteTopicRecords({
    topic,
    partitions: ends.map((p) => ({ partition: p.partition, offset: p.high })),
  });

  const second = await dlqOf(hh, tenant, 2);
  expect(second[1]!.error).toContain('is no longer in Kafka');
  expect(second[1]!.source.headers[REDRIVE_COUNT_HEADER]).toBe('1');
  // --max 1 is used up although the dead letter could not carry the record's own headers.
  expect(await redrive(tenant, '--after', '0s', '--max', '1')).toMatchObject({
    replayed: 0,
    redrivesSpent: 1,
  });
  expect(hh.api.requestsFor('gone')).toHaveLength(4);
});

test('a redrive whose progress is full exits 7 every time, not 0: records passed over must not pile up silently', async () => {
  h = await createHarness({});
  const hh = h;
  const [tenant] = hh.tenants as [string];
  admin = hh.kafka.admin();
  await admin.connect();
  // Dead letters alternating: one the API refused for good (400: never redriven, stays pending) and one that ran
  // out of retries (503: redriven). Each pending one between redriven ones costs the progress metadata a gap.
  const pairs = 1100;
  const producer = hh.kafka.producer();
  await producer.connect();
  try {
    for (let i = 0; i < 2 * pairs; i += 500) {
      const messages = Array.from({ length: Math.min(500, 2 * pairs - i) }, (_, j) => {
        const n = i + j;
        const record = buildDlqRecord({
          id: `full-${n}`,
          timestamp: Date.now() - 3_600_000,
          type: 'dispatch_failure',
          tenant,
          dispatchKey: `full-${n}`,
          error: 'runs API answered',
          httpStatus: n % 2 === 0 ? 400 : 503,
          source: { topic: topics.dispatch(tenant), partition: 0, offset: String(n), timestamp: '0' },
          key: null,
          headers: {},
          value: hh.dispatchValue(`full-${n}`),
        });
        return { value: JSON.stringify(record) };
      });
      await producer.send({ topic: topics.dlq(tenant), acks: -1, messages });
    }
  } finally {
    await producer.disconnect();
  }

  const args = ['dlq', 'redrive', '--tenant', tenant, '--after', '0s', '--max', '1', '--json'];
  const first = await runCli(args, cliEnv(), 240_000);
  expect(first.code).toBe(7);
  expect(first.stderr).toContain('left for a later run');
  const summary = JSON.parse(first.stdout) as Summary & { deferred: number };
  expect(summary.replayed).toBeGreaterThan(500);
  expect(summary.deferred).toBeGreaterThan(0);
  expect(summary.replayed + summary.deferred).toBe(pairs);
  // The next scheduled run finds the same state: it fails again, visibly, until an operator clears the backlog.
  const second = await runCli(args, cliEnv(), 240_000);
  expect(second.code).toBe(7);
  expect((JSON.parse(second.stdout) as Summary).replayed).toBe(0);
});
