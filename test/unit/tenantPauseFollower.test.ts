/**
 * The pause follower (src/kafka/tenantPauseFollower.ts) against a scripted stand-in for kafkajs's admin and consumer:
 * when its first read ends (every pause before the end, transaction markers at the end included), what it does with
 * a refusal, a topic it may not see, one that appears later, and a close during the read. Real Kafka:
 * it_tenant_pause, it_kafka_acls.
 */
import { ConfigError } from '../../src/errors';
import { TenantPauseFollower } from '../../src/kafka/tenantPauseFollower';
import { createLogger } from '../../src/logger';
import { TENANT_PAUSES_TOPIC } from '../../src/contract';
import { kafkaError, scripted } from '../support/pauseFollowerStandIn';
import { waitFor } from '../support/wait';

const logger = createLogger('test', 'silent');

/** 'resolved', 'rejected: …', or 'pending' after `ms`. */
function outcome(p: Promise<unknown>, ms = 1000): Promise<string> {
  return Promise.race([
    p.then(
      () => 'resolved',
      (e: unknown) => `rejected: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`,
    ),
    new Promise<string>((r) => setTimeout(() => r('pending'), ms)),
  ]);
}

test('the first read ends once every pause before the end was read; the state is the latest per tenant', async () => {
  const { kafka, calls } = scripted({
    high: 3n,
    records: [
      [0n, 'acme', true],
      [1n, 'beta', true],
      [2n, 'acme', false],
    ],
  });
  const f = new TenantPauseFollower(kafka, { logger });
  expect(f.notYetRead).toBe('reading tenant pauses');
  expect(await outcome(f.start())).toBe('resolved');
  expect([
    f.pauseOf('acme') !== undefined,
    f.pauseOf('beta') !== undefined,
    f.pauseOf('gamma') !== undefined,
  ]).toEqual([false, true, false]);
  expect(f.notYetRead).toBeUndefined();
  await f.close();
  expect(calls.deleted).toHaveLength(1); // its throwaway group
});

test('a transaction marker at the end (never handed over) still ends the first read', async () => {
  const { kafka } = scripted({ high: 3n, records: [[0n, 'acme', true]], fetchedTo: 2n });
  const f = new TenantPauseFollower(kafka, { logger });
  expect(await outcome(f.start())).toBe('resolved');
  expect(f.pauseOf('acme') !== undefined).toBe(true);
  await f.close();
});

test('without a record of the end, the first read does not end: the process stays unready', async () => {
  const { kafka } = scripted({ high: 5n, records: [[0n, 'acme', true]] });
  const f = new TenantPauseFollower(kafka, { logger });
  const started = f.start();
  expect(await outcome(started, 300)).toBe('pending');
  expect(f.notYetRead).toBe('reading tenant pauses');
  await f.close(); // and a close ends the wait
  expect(await outcome(started)).toBe('resolved');
});

test('refused credentials are not an outage: start rejects with the refusal at once', async () => {
  const refused = Object.assign(new Error('SASL authentication failed'), {
    name: 'KafkaJSSASLAuthenticationError',
  });
  const { kafka, calls } = scripted({ connect: () => Promise.reject(refused) });
  const f = new TenantPauseFollower(kafka, {
    logger,
    refusal: (err) => (err === refused ? new ConfigError('KAFKA_SASL_PASSWORD', 'was rejected') : undefined),
  });
  expect(await outcome(f.start())).toBe(
    'rejected: ConfigError: invalid configuration: KAFKA_SASL_PASSWORD was rejected',
  );
  expect(calls.connects).toBe(1);
  await f.close();
});

test('a topic this principal may not Describe is a refusal, not "no pause yet"', async () => {
  const { kafka } = scripted({
    listed: () => [],
    byName: () => Promise.reject(kafkaError('TOPIC_AUTHORIZATION_FAILED')),
  });
  const f = new TenantPauseFollower(kafka, { logger });
  const result = await outcome(f.start());
  expect(result).toMatch(
    /^rejected: AccessRefusedError: .*poimen-relay\.tenant-pauses.*TOPIC_AUTHORIZATION_FAILED/,
  );
  await f.close();
});

test('Kafka unreachable at start: asked again with backoff, unready and saying why meanwhile', async () => {
  let up = false;
  const { kafka, calls } = scripted({
    connect: async () => {
      if (!up) throw new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9092');
    },
    high: 1n,
    records: [[0n, 'acme', true]],
  });
  const f = new TenantPauseFollower(kafka, { logger });
  const started = f.start();
  await waitFor(() => calls.connects >= 1, { timeoutMs: 2000, what: 'a first connect' });
  expect(f.notYetRead).toMatch(/^Kafka: Connection error: .* \(reading tenant pauses\)$/);
  up = true;
  expect(await outcome(started, 5000)).toBe('resolved');
  expect(f.pauseOf('acme') !== undefined).toBe(true);
  await f.close();
});

test('a one-shot read (a command) rejects at its first failure', async () => {
  const { kafka } = scripted({ connect: () => Promise.reject(new Error('ECONNREFUSED')) });
  const f = new TenantPauseFollower(kafka, { logger, once: true });
  expect(await outcome(f.start())).toBe('rejected: Error: ECONNREFUSED');
  await f.close();
});

test('no topic yet: ready at once, knowing no pause; followed once it appears', async () => {
  let listed: string[] = [];
  const { kafka } = scripted({ listed: () => listed, high: 1n, records: [[0n, 'acme', true]] });
  const f = new TenantPauseFollower(kafka, { logger, recheckMs: 20 });
  expect(await outcome(f.start())).toBe('resolved');
  expect(f.notYetRead).toBeUndefined();
  expect(f.pauseOf('acme') !== undefined).toBe(false);
  listed = [TENANT_PAUSES_TOPIC];
  await waitFor(() => f.pauseOf('acme') !== undefined, {
    timeoutMs: 2000,
    what: 'the pause read once the topic appeared',
  });
  await f.close();
});

test('a follow that breaks after start keeps the pauses read, is unready saying why, and follows again', async () => {
  const { kafka, calls } = scripted({ high: 1n, records: [[0n, 'acme', true]] });
  const f = new TenantPauseFollower(kafka, { logger, recheckMs: 20 });
  expect(await outcome(f.start())).toBe('resolved');
  calls.crash(new Error('TOPIC_AUTHORIZATION_FAILED'));
  expect(f.notYetRead).toBe('Kafka: TOPIC_AUTHORIZATION_FAILED (tenant pauses not followed)');
  expect(f.pauseOf('acme') !== undefined).toBe(true);
  await waitFor(() => f.notYetRead === undefined, { timeoutMs: 2000, what: 'following again' });
  expect(calls.consumers).toBe(2);
  expect(calls.deleted).toHaveLength(1); // the broken consumer's group
  await f.close();
});

test("a command's read fails when kafkajs keeps restarting its consumer (a broker gone), rather than wait for ever", async () => {
  const { kafka, calls } = scripted({ high: 1n, silent: true });
  const f = new TenantPauseFollower(kafka, { logger, once: true });
  const started = f.start();
  await waitFor(() => calls.consumers === 1, { timeoutMs: 2000, what: 'the read under way' });
  await new Promise((r) => setTimeout(r, 20));
  calls.crash(Object.assign(new Error('Connection error'), { name: 'KafkaJSNumberOfRetriesExceeded' }), true);
  expect(await outcome(started)).toBe('rejected: KafkaJSNumberOfRetriesExceeded: Connection error');
  await f.close();
});

test('a close while the end offsets are asked for starts no consumer', async () => {
  let answer: (() => void) | undefined;
  const { kafka, calls } = scripted({ high: 1n, offsets: () => new Promise<void>((r) => (answer = r)) });
  const f = new TenantPauseFollower(kafka, { logger });
  const started = f.start();
  await waitFor(() => answer !== undefined, { timeoutMs: 2000, what: 'the end offsets asked for' });
  await f.close();
  answer!();
  expect(await outcome(started)).toBe('resolved');
  expect(calls.consumers).toBe(0);
});

test('one failed look for the topic does not make the ingester unready; three in a row do', async () => {
  const asked: { reject: (err: Error) => void }[] = [];
  const { kafka } = scripted({
    listed: () => [],
    // The first answer (at start): no such topic. Every later one: a request the test fails by hand.
    byName: () =>
      asked.length === 0 && (asked.push({ reject: () => undefined }), true)
        ? Promise.reject(kafkaError('UNKNOWN_TOPIC_OR_PARTITION'))
        : new Promise<void>((_, reject) => void asked.push({ reject })),
  });
  const f = new TenantPauseFollower(kafka, { logger, recheckMs: 10 });
  expect(await outcome(f.start())).toBe('resolved');
  const timeout = Object.assign(new Error('Request timed out'), { name: 'KafkaJSRequestTimeoutError' });
  for (let look = 1; look <= 3; look++) {
    await waitFor(() => asked.length === look + 1, { timeoutMs: 2000, what: `look ${look} asked` });
    asked[look]!.reject(timeout);
    await waitFor(() => asked.length === look + 2 || look === 3, {
      timeoutMs: 2000,
      what: `look ${look} over`,
    });
    await new Promise((r) => setImmediate(r));
    if (look < 3) expect(f.notYetRead).toBeUndefined();
  }
  await waitFor(() => f.notYetRead !== undefined, { timeoutMs: 2000, what: 'unready after three' });
  expect(f.notYetRead).toBe('Kafka: Request timed out (tenant pauses not followed)');
  await f.close();
});

test('a consumer kafkajs brings back after close (its restart already timed) is not restarted again, and stops as it rejoins', async () => {
  const { kafka, calls } = scripted({ records: [[0n, 'acme', true]], high: 1n });
  const f = new TenantPauseFollower(kafka, { logger });
  await f.start();
  await expect(calls.restarts()).resolves.toBe(true);
  await f.close();
  const disconnects = calls.disconnects;
  expect(disconnects).toBeGreaterThan(0);
  await expect(calls.restarts()).resolves.toBe(false);
  // The restart kafkajs had timed before the close joins the group anyway: it is disconnected again.
  calls.join();
  await new Promise((r) => setImmediate(r));
  expect(calls.disconnects).toBe(disconnects + 1);
});
