/* eslint-disable max-lines -- one case per replay rule, all on the same stubs of the range reader and producer */
/**
 * What `dlq replay`, `dlq discard` and `dlq purge-tests` do with each dead letter (src/ops/dlq.ts, contract §8):
 * which records are re-published and how, which are passed over and counted as what, and what is recorded as
 * handled. Kafka is replaced by stubs of the range reader, the admin and the producer; the records are the
 * contract's own.
 */
import type { KafkaMessage } from 'kafkajs';
import {
  type DlqType,
  buildDlqRecord,
  buildTestDeadLetter,
  dlqReplayGroup,
  testDeadLetterHeaders,
  topics,
} from '../../src/contract';
import { ConfigError } from '../../src/errors';
import type { RangeCommit } from '../../src/kafka/readRange';
import { type ReplayOptions, parseDlqType, replayDlq } from '../../src/ops/dlq';

const TENANT = 'acme';
const T0 = 1_700_000_000_000;

let messages: KafkaMessage[] = [];
let reads: Record<string, unknown>[] = [];
let commits: (RangeCommit | void)[] = [];
jest.mock('../../src/kafka/readRange', () => ({
  watermarks: async () => new Map([[0, { low: 0n, high: 100n }]]),
  readRange: async (
    _kafka: unknown,
    _admin: unknown,
    opts: { onMessage: (p: number, m: KafkaMessage) => Promise<RangeCommit | void> },
  ) => {
    reads.push(opts);
    for (const m of messages) commits.push(await opts.onMessage(0, m));
  },
}));

function deadLetter(
  offset: number,
  o: { type?: DlqType; id?: string; atMs?: number; key?: string | null; value?: string | Buffer | null } = {},
): KafkaMessage {
  const record = buildDlqRecord({
    id: o.id ?? `dl-${offset}`,
    timestamp: o.atMs ?? T0,
    type: o.type ?? 'dispatch_failure',
    tenant: TENANT,
    dispatchKey: `d-${offset}`,
    error: 'runs API answered 503',
    source: { topic: topics.dispatch(TENANT), partition: 0, offset: String(offset), timestamp: String(T0) },
    ...(o.key === undefined ? {} : { key: o.key }),
    headers: { traceparent: Buffer.from('00-abc-def-01') },
    value: o.value === undefined ? `{"n":${offset}}` : o.value,
  });
  return {
    offset: String(offset),
    value: Buffer.from(JSON.stringify(record)),
    key: null,
    headers: {},
  } as never;
}

function testLetter(offset: number): KafkaMessage {
  const record = buildTestDeadLetter({
    id: `t-${offset}`,
    timestamp: T0,
    tenant: TENANT,
    index: 1,
    count: 1,
  });
  const value = Buffer.from(JSON.stringify(record));
  return { offset: String(offset), value, key: null, headers: testDeadLetterHeaders() } as never;
}

const junk = (offset: number) =>
  ({ offset: String(offset), value: Buffer.from('not a dead letter'), key: null, headers: {} }) as never;

function stubs(o: { committed?: string; metadata?: string; sendError?: Error } = {}) {
  const sent: {
    topic: string;
    acks: number;
    messages: { key: Buffer | null; value: Buffer | null; headers: Record<string, unknown> }[];
  }[] = [];
  const calls = { connect: 0, disconnect: 0, describeGroups: 0 };
  const kafka = {
    producer: () => ({
      connect: async () => void calls.connect++,
      disconnect: async () => void calls.disconnect++,
      send: async (r: (typeof sent)[number]) => {
        if (o.sendError) throw o.sendError;
        sent.push(r);
      },
    }),
  };
  const admin = {
    listTopics: async () => [topics.dlq(TENANT)],
    describeGroups: async () => {
      calls.describeGroups++;
      return { groups: [{ members: [] }] };
    },
    fetchOffsets: async () => [
      {
        topic: topics.dlq(TENANT),
        partitions: [{ partition: 0, offset: o.committed ?? '-1', metadata: o.metadata ?? null }],
      },
    ],
  };
  const run = (opts: Partial<ReplayOptions> = {}) =>
    replayDlq(kafka as never, admin as never, { tenant: TENANT, ...opts });
  return { run, sent, calls };
}

beforeEach(() => {
  reads = [];
  commits = [];
});

test('--type takes a DLQ type; --force without --type is refused before anything is read', async () => {
  expect(parseDlqType('tenant_mismatch')).toBe('tenant_mismatch');
  expect(() => parseDlqType('nope')).toThrow(
    new ConfigError(
      '--type',
      '= "nope": must be one of malformed_dispatch, tenant_mismatch, dispatch_failure',
    ),
  );
  const { run } = stubs();
  await expect(run({ force: true })).rejects.toThrow(ConfigError);
  await expect(run({ force: true })).rejects.toThrow(/--force.*needs --type/);
  expect(reads).toEqual([]);
});

test('a dispatch failure is re-published as its source record, recorded handled, in the replay group', async () => {
  messages = [deadLetter(0, { key: 'the-key' }), deadLetter(1, { key: null })];
  const { run, sent, calls } = stubs();
  const seen: string[] = [];
  let total = -1;
  const summary = await run({
    onStart: (n) => (total = n),
    onRecord: (o, e) => seen.push(`${o}:${e.offset}`),
  });
  expect(summary).toMatchObject({ examined: 2, replayed: 2, filtered: 0 });
  expect(summary.records).toBeUndefined();
  expect(total).toBe(100);
  expect(seen).toEqual(['replayed:0', 'replayed:1']);
  expect(calls).toEqual({ connect: 1, disconnect: 1, describeGroups: 1 });
  expect(reads[0]).toMatchObject({
    groupId: dlqReplayGroup(TENANT),
    commit: true,
    ranges: [{ start: 0n, end: 100n }],
  });
  expect(reads[0]!.exclusive).toBeDefined();
  expect(sent.map((s) => [s.topic, s.acks])).toEqual([
    [topics.dispatch(TENANT), -1],
    [topics.dispatch(TENANT), -1],
  ]);
  const [first, second] = sent.map((s) => s.messages[0]!);
  expect(first!.key?.toString()).toBe('the-key');
  // No source key kept: the conventional key of the dispatch.
  expect(second!.key?.toString()).toBe(`${TENANT}:d-1`);
  expect(first!.value?.toString()).toBe('{"n":0}');
  expect(first!.headers).toEqual({ traceparent: Buffer.from('00-abc-def-01'), 'poimen-replay-of': 'dl-0' });
  expect(commits).toEqual([
    { offset: 1n, metadata: 'v1:' },
    { offset: 2n, metadata: 'v1:' },
  ]);
});

test('filters pass records over and leave them pending; what is handled past them is kept in the metadata', async () => {
  messages = [
    deadLetter(0, { id: 'other' }),
    deadLetter(1, { atMs: T0 - 1 }),
    deadLetter(2, { type: 'tenant_mismatch' }),
    deadLetter(3),
  ];
  const { run, sent } = stubs();
  const summary = await run({ ids: ['dl-1', 'dl-2', 'dl-3'], sinceMs: T0 });
  expect(summary).toMatchObject({ examined: 4, filtered: 2, notReplayable: 1, replayed: 1 });
  expect(sent).toHaveLength(1);
  expect(commits).toEqual([undefined, undefined, undefined, { offset: 0n, metadata: 'v1:3.1' }]);
  const typed = await stubs().run({ type: 'tenant_mismatch' });
  expect(typed).toMatchObject({ filtered: 3, notReplayable: 1, replayed: 0 });
});

test('a malformed or mismatched record is replayed only with --force for its type; one without payload never', async () => {
  messages = [
    deadLetter(0, { type: 'malformed_dispatch' }),
    deadLetter(1, { type: 'malformed_dispatch', value: null }),
  ];
  const forced = stubs();
  expect(await forced.run({ type: 'malformed_dispatch', force: true })).toMatchObject({
    replayed: 1,
    notReplayable: 1,
  });
  expect(forced.sent).toHaveLength(1);
  expect(await stubs().run({ type: 'malformed_dispatch' })).toMatchObject({ replayed: 0, notReplayable: 2 });
  // A value that is not text (kept as base64) is re-published byte for byte.
  messages = [deadLetter(0, { value: Buffer.from([0xff, 0xfe, 0x00]) })];
  const binary = stubs();
  expect(await binary.run()).toMatchObject({ replayed: 1, notReplayable: 0 });
  expect(binary.sent[0]!.messages[0]!.value).toEqual(Buffer.from([0xff, 0xfe, 0x00]));
});

test('test dead letters and values that are not dead letters are never re-published', async () => {
  messages = [testLetter(0), junk(1), deadLetter(2)];
  const { run, sent } = stubs();
  const seen: string[] = [];
  const summary = await run({ force: true, type: 'dispatch_failure', onRecord: (o) => seen.push(o) });
  // Counted once, as a test dead letter, in no other count.
  expect(summary).toEqual({
    examined: 3,
    replayed: 1,
    wouldReplay: 0,
    discarded: 0,
    filtered: 0,
    notReplayable: 0,
    unreadable: 1,
    tests: 1,
    alreadyHandled: 0,
    deferred: 0,
  });
  expect(seen).toEqual(['test', 'unreadable', 'replayed']);
  expect(sent).toHaveLength(1);
});

test('a dry run reads through a throwaway group, records nothing and lists what it would replay', async () => {
  messages = [deadLetter(0), testLetter(1)];
  const { run, sent, calls } = stubs();
  const seen: string[] = [];
  const summary = await run({ dryRun: true, onRecord: (o) => seen.push(o) });
  expect(summary).toMatchObject({ wouldReplay: 1, replayed: 0, tests: 1 });
  expect(summary.records).toEqual([
    { id: 'dl-0', type: 'dispatch_failure', dispatch_key: 'd-0', partition: 0, offset: '0', test: false },
  ]);
  expect(seen).toEqual(['would_replay', 'test']);
  expect(sent).toEqual([]);
  expect(calls).toEqual({ connect: 0, disconnect: 0, describeGroups: 0 });
  expect(reads[0]).toMatchObject({ commit: false });
  expect(reads[0]!.groupId).toMatch(/^poimen-relay-dlq-dry-run-[0-9a-f-]{36}$/);
  expect(reads[0]!.exclusive).toBeUndefined();
  expect(commits).toEqual([undefined, undefined]);
});

test('discard records matching records handled without re-publishing; --all takes what is not a dead letter', async () => {
  messages = [deadLetter(0, { type: 'malformed_dispatch' }), junk(1), testLetter(2)];
  const { run, sent, calls } = stubs();
  const summary = await run({ discard: { all: false } });
  expect(summary).toMatchObject({ discarded: 2, unreadable: 1, tests: 1 });
  expect(sent).toEqual([]);
  expect(calls.connect).toBe(0);
  expect(commits).toEqual([{ offset: 1n, metadata: 'v1:' }, undefined, { offset: 1n, metadata: 'v1:1.1' }]);
  commits = [];
  expect(await run({ discard: { all: true } })).toMatchObject({ discarded: 3, unreadable: 0 });
  const dry = await stubs().run({ discard: { all: true }, dryRun: true, onRecord: () => undefined });
  expect(dry).toMatchObject({ discarded: 3 });
  expect(dry.records).toHaveLength(3);
});

test('purge-tests discards exactly the test dead letters; every other record stays pending', async () => {
  messages = [deadLetter(0), testLetter(1), junk(2)];
  const summary = await stubs().run({ discard: { all: true, tests: true } });
  expect(summary).toMatchObject({ examined: 3, tests: 1, discarded: 1, filtered: 2 });
  expect(commits).toEqual([undefined, { offset: 0n, metadata: 'v1:1.1' }, undefined]);
});

test('records handled by an earlier run are skipped; --from-beginning reads every retained record again', async () => {
  messages = [deadLetter(5), deadLetter(6), deadLetter(7)];
  // Offsets below 5 and offset 6 handled; 5 and 7 pending.
  const resumed = stubs({ committed: '5', metadata: 'v1:1.1' });
  let total = -1;
  expect(await resumed.run({ onStart: (n) => (total = n) })).toMatchObject({
    alreadyHandled: 1,
    examined: 2,
    replayed: 2,
  });
  expect(total).toBe(94);
  expect(reads[0]).toMatchObject({ ranges: [{ partition: 0, start: 5n, end: 100n }] });
  reads = [];
  const again = stubs({ committed: '5', metadata: 'v1:1.1' });
  expect(await again.run({ fromBeginning: true, onStart: (n) => (total = n) })).toMatchObject({
    alreadyHandled: 0,
    replayed: 3,
  });
  expect(total).toBe(100);
  expect(reads[0]).toMatchObject({ ranges: [{ partition: 0, start: 0n, end: 100n }] });
});

test('--rate spaces the re-published records', async () => {
  messages = [deadLetter(0), deadLetter(1), deadLetter(2)];
  const started = Date.now();
  expect(await stubs().run({ ratePerSec: 20 })).toMatchObject({ replayed: 3 });
  // Two gaps of at least 1000 / 20 ms each (timers may fire a millisecond early).
  expect(Date.now() - started).toBeGreaterThanOrEqual(2 * 50 - 2);
});

test('a send that fails, with a report line that cannot be written either, fails with the send error', async () => {
  messages = [deadLetter(0, { key: 'the-key' })];
  const sendError = new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9');
  const { run } = stubs({ sendError });
  const seen: string[] = [];
  const outcome = run({
    force: true,
    type: 'dispatch_failure',
    onRecord: (o) => {
      seen.push(o);
      if (o === 'failed') throw new ConfigError('--report', '= "/dev/full": cannot be written (ENOSPC)');
    },
  });
  await expect(outcome).rejects.toBe(sendError);
  expect(seen).toEqual(['failed']);
});
