/**
 * `dlq send-test` (src/ops/dlqSendTest.ts): marked test dead letters written through the relay's own DLQ
 * publisher, to an existing DLQ topic only, the publisher closed whatever happens. The publisher is a stub that
 * records what it was given.
 */
import { isTestDeadLetter, testDeadLetterHeaders, topics } from '../../src/contract';
import { NotFoundError } from '../../src/errors';
import type { DlqRecord } from '../../src/contract';
import type { KafkaAdmin, KafkaClient } from '../../src/kafka/port';
import type { Logger } from '../../src/logger';
import { sendTestDeadLetters } from '../../src/ops/dlqSendTest';

const published: { record: DlqRecord; key: unknown; headers: unknown }[] = [];
const made: { logger: unknown; closed: boolean }[] = [];
let failAt = 0;
jest.mock('../../src/kafka/dlqPublisher', () => ({
  DlqPublisher: class {
    private readonly me: { logger: unknown; closed: boolean };
    constructor(_kafka: unknown, _metrics: unknown, logger: unknown) {
      this.me = { logger, closed: false };
      made.push(this.me);
    }
    async publish(record: DlqRecord, key: unknown, opts: { headers: unknown }) {
      if (published.length + 1 === failAt) throw new Error('broker gone');
      published.push({ record, key, headers: opts.headers });
    }
    async close() {
      this.me.closed = true;
    }
  },
}));

const TENANT = 'acme';
const kafka = {} as KafkaClient;
const admin = (names: string[]) => ({ listTopics: async () => names }) as unknown as KafkaAdmin;

function logger(levelVal: number) {
  const quiet = { quiet: true };
  const child = jest.fn(() => quiet);
  return { logger: { levelVal, child } as unknown as Logger, child, quiet };
}

beforeEach(() => {
  published.length = 0;
  made.length = 0;
  failAt = 0;
});

test('writes `count` marked test dead letters, numbered, without a key, and closes the publisher', async () => {
  const sent: string[] = [];
  const { logger: log } = logger(30);
  const result = await sendTestDeadLetters(kafka, admin([topics.dlq(TENANT)]), log, {
    tenant: TENANT,
    count: 3,
    onSent: (id) => sent.push(id),
  });
  expect(result.topic).toBe(topics.dlq(TENANT));
  expect(result.published).toBe(3);
  expect(result.ids).toEqual(published.map((p) => p.record.id));
  expect(sent).toEqual(result.ids);
  expect(new Set(result.ids).size).toBe(3);
  for (const p of published) {
    expect(p.key).toBeNull();
    expect(p.headers).toEqual(testDeadLetterHeaders());
    expect(isTestDeadLetter(p.record, testDeadLetterHeaders())).toBe(true);
    expect(p.record.tenant_id).toBe(TENANT);
  }
  expect(published.map((p) => p.record.error.split(' ')[3])).toEqual(['1/3', '2/3', '3/3']);
  expect(made).toEqual([expect.objectContaining({ closed: true })]);
});

test('a tenant without a DLQ topic is an error: nothing is written, no publisher made', async () => {
  const sending = sendTestDeadLetters(kafka, admin([]), logger(30).logger, { tenant: TENANT, count: 1 });
  await expect(sending).rejects.toThrow(NotFoundError);
  expect(made).toEqual([]);
});

test('a publish that fails ends the command, and the publisher is closed', async () => {
  failAt = 2;
  const sending = sendTestDeadLetters(kafka, admin([topics.dlq(TENANT)]), logger(30).logger, {
    tenant: TENANT,
    count: 3,
  });
  await expect(sending).rejects.toThrow('broker gone');
  expect(published).toHaveLength(1);
  expect(made).toEqual([expect.objectContaining({ closed: true })]);
});

test('at the default level the publisher logs warnings only; at debug it logs every record', async () => {
  const info = logger(30);
  await sendTestDeadLetters(kafka, admin([topics.dlq(TENANT)]), info.logger, { tenant: TENANT, count: 1 });
  expect(info.child).toHaveBeenCalledWith({ component: 'dlq' }, { level: 'warn' });
  expect(made[0]!.logger).toBe(info.quiet);
  const debug = logger(20);
  await sendTestDeadLetters(kafka, admin([topics.dlq(TENANT)]), debug.logger, { tenant: TENANT, count: 1 });
  expect(debug.child).not.toHaveBeenCalled();
  expect(made[1]!.logger).toBe(debug.logger);
});
