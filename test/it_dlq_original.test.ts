/**
 * contract §6: a dead letter carries the source record as it was consumed — its value byte for byte (not a rebuilt
 * body), its key and its headers — and `dlq replay` re-publishes that same message, key and headers included.
 * Real Kafka, real Temporal, the relay's processes and CLI.
 */
import type { KafkaMessage } from 'kafkajs';
import { topics } from '../src/contract';
import { type CliResult, runCli, cliEnv } from './support/cli';
import { waitForDeadLetters } from './support/dlqTopic';
import { type Harness, createHarness } from './support/relayHarness';
import { uniqueName } from './support/names';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

let h: Harness;
afterEach(async () => {
  await h?.cleanup();
});

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

function ok(res: CliResult): CliResult {
  if (res.code !== 0) throw new Error(`exit ${res.code}: ${res.stderr}`);
  return res;
}

/** Every record of the tenant's .dispatch topic, with key and headers as text. */
async function dispatchRecords(): Promise<
  { key: string | null; value: string; headers: Record<string, string> }[]
> {
  return (await rawDispatchRecords()).map((m) => ({
    key: m.key?.toString('utf8') ?? null,
    value: m.value?.toString('utf8') ?? '',
    headers: Object.fromEntries(Object.entries(m.headers ?? {}).map(([k, v]) => [k, String(v)])),
  }));
}

/** Every record of the tenant's .dispatch topic (one partition), as kafkajs gives it. */
async function rawDispatchRecords(): Promise<KafkaMessage[]> {
  const topic = topics.dispatch(h.tenant);
  const consumer = h.kafka.consumer({ groupId: uniqueName('it-dispatch-reader') });
  const seen: KafkaMessage[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const admin = h.kafka.admin();
  await admin.connect();
  const [high] = (await admin.fetchTopicOffsets(topic).finally(() => admin.disconnect())).map((p) =>
    Number(p.high),
  );
  await consumer.run({ eachMessage: async ({ message }) => void seen.push(message) });
  await waitFor(() => seen.length >= high!, { what: `${high} records of ${topic}` });
  await consumer.disconnect();
  return seen;
}

/** Header values as hex, so a comparison shows the bytes (repeated headers as arrays, in order). */
function hexHeaders(headers: KafkaMessage['headers']): Record<string, string | string[]> {
  const hex = (v: Buffer | string | undefined) => Buffer.from(v ?? '').toString('hex');
  return Object.fromEntries(
    Object.entries(headers ?? {}).map(([k, v]) => [k, Array.isArray(v) ? v.map(hex) : hex(v)]),
  );
}

/** Replays one dead letter (the API accepts now) and returns the record it re-published on .dispatch. */
async function replayOne(id: string): Promise<KafkaMessage> {
  h.api.always(undefined);
  const before = (await rawDispatchRecords()).length;
  ok(await runCli(['dlq', 'replay', '--tenant', h.tenant, '--id', id, '--json'], cliEnv(), 120_000));
  const records = await waitFor(
    async () => {
      const all = await rawDispatchRecords();
      return all.length === before + 1 ? all : undefined;
    },
    { what: 'the replayed record on .dispatch' },
  );
  return records[before]!;
}

test('a dispatch_failure dead letter keeps the original value, key and headers, and replay re-publishes them', async () => {
  h = await createHarness();
  await h.startWorker();
  await h.startIngester();
  h.api.scriptFor('orig-1', { kind: 'status', status: 422, body: 'refused' });
  // Extra fields, a tenant_id, unusual spacing and key order: none of it is in the four-field body.
  const original = `{ "dispatch_key":"orig-1",  "tenant_id": "${h.tenant}", "workflow_ref": "onboarding@v3",\n "input": {"user": 42, "big": 12345678901234567890}, "goal_id": null, "extra": {"keep": [1, 2]} }`;
  await h.publish(original, {
    key: 'producer-key-17',
    headers: { traceparent: TRACEPARENT, 'x-origin': 'billing' },
  });

  const [dead] = await h.readDlq(1);
  expect(dead).toMatchObject({ type: 'dispatch_failure', dispatch_key: 'orig-1', http_status: 422 });
  expect(dead!.payload).toBe(original);
  expect(dead!.source).toMatchObject({
    topic: topics.dispatch(h.tenant),
    partition: 0,
    offset: '0',
    key: 'producer-key-17',
    headers: { traceparent: TRACEPARENT, 'x-origin': 'billing' },
  });

  // Replayed (the API accepts it now): the same message, same key and headers, marked as a replay.
  h.api.always(undefined);
  ok(await runCli(['dlq', 'replay', '--tenant', h.tenant, '--id', dead!.id, '--json'], cliEnv(), 120_000));
  const records = await waitFor(
    async () => {
      const all = await dispatchRecords();
      return all.length === 2 ? all : undefined;
    },
    { what: 'the replayed record on .dispatch' },
  );
  const replayed = records[1]!;
  expect(replayed.value).toBe(original);
  expect(replayed.key).toBe('producer-key-17');
  expect(replayed.headers).toMatchObject({
    traceparent: TRACEPARENT,
    'x-origin': 'billing',
    'poimen-replay-of': dead!.id,
  });
  await h.expectCommittedAtLogEnd();
});

test('a malformed record’s dead letter keeps its key and headers', async () => {
  h = await createHarness();
  await h.startWorker();
  await h.startIngester();
  await h.publish('{"dispatch_key": "bad-1", "workflow_ref": 7}', {
    key: 'producer-key-bad',
    headers: { 'x-origin': 'billing' },
  });
  const [dead] = await h.readDlq(1);
  expect(dead).toMatchObject({
    type: 'malformed_dispatch',
    payload: '{"dispatch_key": "bad-1", "workflow_ref": 7}',
  });
  expect(dead!.source).toMatchObject({ key: 'producer-key-bad', headers: { 'x-origin': 'billing' } });
  await h.expectCommittedAtLogEnd();
});

test('header values that are not UTF-8 survive the dead letter: replay re-publishes the same bytes', async () => {
  h = await createHarness();
  await h.startWorker();
  await h.startIngester();
  h.api.scriptFor('bin-1', { kind: 'status', status: 422, body: 'refused' });
  const headers = {
    traceparent: TRACEPARENT,
    'x-signature': Buffer.from([0xff, 0x00, 0x80, 0xfe]),
    'x-empty': Buffer.alloc(0),
    'x-mixed': [Buffer.from('text'), Buffer.from([0xc3, 0x28])],
  };
  await h.publish(h.dispatchValue('bin-1'), { key: 'bin-key', headers });

  const [dead] = await h.readDlq(1);
  expect(dead).toMatchObject({ type: 'dispatch_failure', dispatch_key: 'bin-1' });
  const replayed = await replayOne(dead!.id);
  expect(hexHeaders(replayed.headers)).toEqual(hexHeaders({ ...headers, 'poimen-replay-of': dead!.id }));
  // The same names in the same order as the original, the replay's mark after them.
  expect(Object.keys(replayed.headers ?? {})).toEqual([...Object.keys(headers), 'poimen-replay-of']);
  await h.expectCommittedAtLogEnd();
});

test('credential headers never reach a dead letter, on the ingest and the worker path; replay lacks them', async () => {
  h = await createHarness();
  await h.startWorker();
  await h.startIngester();
  h.api.scriptFor('cred-1', { kind: 'status', status: 422, body: 'refused' });
  const secrets = {
    authorization: 'Bearer producer-secret-7f3a',
    'Proxy-Authorization': 'Basic cHJveHk6c2VjcmV0LTli',
    cookie: 'session=cookie-secret-41c2',
    'x-api-key': 'api-key-secret-d09e',
  };
  const kept = { traceparent: TRACEPARENT, 'x-origin': 'billing' };
  // The worker path (a dispatch_failure reads the record back from Kafka), then the ingest path (malformed).
  await h.publish(h.dispatchValue('cred-1'), { key: 'cred-key', headers: { ...secrets, ...kept } });
  await h.publish('{"dispatch_key": "cred-2", "workflow_ref": 7}', {
    headers: { ...secrets, authorization: Buffer.from([0xff, 0x42]), ...kept },
  });
  // As written on the DLQ topic (read through the product's reader), not as parsed: no secret in any byte.
  const stored = await waitForDeadLetters(h.kafka, [topics.dlq(h.tenant)], 2);
  expect(stored).toHaveLength(2);
  const letters = stored.map((l) => l.record!);
  expect(letters.map((r) => r.type).sort()).toEqual(['dispatch_failure', 'malformed_dispatch']);
  for (const { message } of stored) {
    const text = message.value!.toString('utf8');
    for (const secret of [...Object.values(secrets), '/0I=']) expect(text).not.toContain(secret);
    const source = (JSON.parse(text) as { source: Record<string, unknown> }).source;
    expect(source['headers']).toEqual(kept);
    expect(source['headers_base64']).toBeUndefined();
  }

  const failure = letters.find((r) => r.type === 'dispatch_failure')!;
  const replayed = await replayOne(failure.id);
  expect(Object.keys(replayed.headers ?? {})).toEqual([...Object.keys(kept), 'poimen-replay-of']);
  await h.expectCommittedAtLogEnd();
});
