/**
 * The renewing client (src/kafka/renewingClient.ts) with stand-in clients that count their connects and
 * disconnects: a call that finds a topic unknown is tried once more on a new client, the old one is disconnected
 * once its calls end, any other failure is the caller's, and close() disconnects them all. Real Kafka (a topic
 * deleted by an operator): it_ingest_gauges, it_dlq_recreated_topic.
 */
import { topicLost, topicUnknown } from '../../src/kafka/errors';
import { RenewingClient } from '../../src/kafka/renewingClient';

class StandIn {
  static made: StandIn[] = [];
  connects = 0;
  disconnects = 0;
  constructor(readonly connectFails = false) {
    StandIn.made.push(this);
  }
  connect(): Promise<void> {
    this.connects++;
    return this.connectFails ? Promise.reject(new Error('ECONNREFUSED')) : Promise.resolve();
  }
  disconnect(): Promise<void> {
    this.disconnects++;
    return Promise.resolve();
  }
}

/** kafkajs's shape: the protocol error as the cause of a wrapper. */
function unknownTopic(): Error {
  return Object.assign(new Error('KafkaJSNumberOfRetriesExceeded'), {
    cause: Object.assign(new Error('This server does not host this topic-partition'), {
      type: 'UNKNOWN_TOPIC_OR_PARTITION',
    }),
  });
}

beforeEach(() => (StandIn.made = []));

test('topicUnknown and topicLost look along the causes for the type', () => {
  expect(topicUnknown(unknownTopic())).toBe(true);
  const refused = Object.assign(new Error('x'), { type: 'TOPIC_AUTHORIZATION_FAILED' });
  expect([topicUnknown(refused), topicLost(refused), topicLost(unknownTopic())]).toEqual([false, true, true]);
  expect(topicUnknown(Object.assign(new Error('x'), { type: 'LEADER_NOT_AVAILABLE' }))).toBe(false);
  expect(topicUnknown('UNKNOWN_TOPIC_OR_PARTITION')).toBe(false);
});

test('calls share one client, connected once', async () => {
  const c = new RenewingClient(() => new StandIn());
  expect(await Promise.all([c.use(async () => 1), c.use(async () => 2)])).toEqual([1, 2]);
  expect(await c.use(async () => 3)).toBe(3);
  expect(StandIn.made.map((s) => [s.connects, s.disconnects])).toEqual([[1, 0]]);
  await c.close();
  await c.close();
  expect(StandIn.made.map((s) => s.disconnects)).toEqual([1]);
  await expect(c.use(async () => 4)).rejects.toThrow('Kafka client is closed');
});

test('a topic unknown: the call is tried once more on a new client, and the old one is let go', async () => {
  const c = new RenewingClient(() => new StandIn());
  const seen: StandIn[] = [];
  const result = await c.use(async (client) => {
    seen.push(client);
    if (seen.length === 1) throw unknownTopic();
    return 'ok';
  });
  expect(result).toBe('ok');
  expect(seen[0]).not.toBe(seen[1]);
  expect(StandIn.made.map((s) => [s.connects, s.disconnects])).toEqual([
    [1, 1],
    [1, 0],
  ]);
  // The new client serves the next calls.
  await c.use(async (client) => expect(client).toBe(seen[1]));
  await c.close();
  expect(StandIn.made.map((s) => s.disconnects)).toEqual([1, 1]);
});

test('unknown on the new client too: the caller hears it, after exactly two tries', async () => {
  const c = new RenewingClient(() => new StandIn());
  let tries = 0;
  await expect(
    c.use(async () => {
      tries++;
      throw unknownTopic();
    }),
  ).rejects.toThrow('KafkaJSNumberOfRetriesExceeded');
  expect(tries).toBe(2);
  expect(StandIn.made.map((s) => s.disconnects)).toEqual([1, 1]);
  await c.close();
});

test('any other failure is the caller’s: no second try, the client kept', async () => {
  const c = new RenewingClient(() => new StandIn());
  let tries = 0;
  await expect(
    c.use(async () => {
      tries++;
      throw Object.assign(new Error('leader'), { type: 'LEADER_NOT_AVAILABLE' });
    }),
  ).rejects.toThrow('leader');
  expect(tries).toBe(1);
  await c.use(async () => undefined);
  expect(StandIn.made.map((s) => [s.connects, s.disconnects])).toEqual([[1, 0]]);
  await c.close();
});

test('a client given up on is disconnected only once the calls still running on it end', async () => {
  const c = new RenewingClient(() => new StandIn());
  let release!: () => void;
  const slow = c.use(() => new Promise<string>((r) => (release = () => r('slow done'))));
  await new Promise((r) => setImmediate(r));
  await expect(
    c.use(async (client) => {
      if (client === StandIn.made[0]) throw unknownTopic();
      return 'renewed';
    }),
  ).resolves.toBe('renewed');
  expect(StandIn.made.map((s) => s.disconnects)).toEqual([0, 0]);
  release();
  expect(await slow).toBe('slow done');
  expect(StandIn.made.map((s) => s.disconnects)).toEqual([1, 0]);
  await c.close();
});

test('a client that could not connect is not used again', async () => {
  let n = 0;
  const c = new RenewingClient(() => new StandIn(n++ === 0));
  await expect(c.use(async () => 'never')).rejects.toThrow('ECONNREFUSED');
  expect(await c.use(async () => 'second')).toBe('second');
  expect(StandIn.made.map((s) => [s.connects, s.disconnects])).toEqual([
    [1, 1],
    [1, 0],
  ]);
  await c.close();
});

test('close disconnects a client given up on whose call still runs', async () => {
  const c = new RenewingClient(() => new StandIn());
  let release!: () => void;
  const slow = c.use(() => new Promise<void>((r) => (release = r)));
  await new Promise((r) => setImmediate(r));
  await c.use(async (client) => {
    if (client === StandIn.made[0]) throw unknownTopic();
  });
  await c.close();
  expect(StandIn.made.map((s) => s.disconnects)).toEqual([1, 1]);
  release();
  await slow;
  expect(StandIn.made.map((s) => s.disconnects)).toEqual([1, 1]); // not twice
});

test('two calls that fail one after the other on the same old client make one new client, not two', async () => {
  const c = new RenewingClient(() => new StandIn());
  const gate: (() => void)[] = [];
  const failOnFirst = (client: StandIn) =>
    client === StandIn.made[0]
      ? new Promise<never>((_, reject) => gate.push(() => reject(unknownTopic())))
      : Promise.resolve('ok');
  const both = Promise.all([c.use(failOnFirst), c.use(failOnFirst)]);
  await new Promise((r) => setImmediate(r));
  gate[0]!(); // the first gives the old client up and goes on on a new one
  await new Promise((r) => setImmediate(r));
  expect(StandIn.made).toHaveLength(2);
  gate[1]!(); // the second, failing later on the old client, takes the new one too
  expect(await both).toEqual(['ok', 'ok']);
  expect(StandIn.made.map((s) => [s.connects, s.disconnects])).toEqual([
    [1, 1],
    [1, 0],
  ]);
  await c.close();
  expect(StandIn.made.map((s) => s.disconnects)).toEqual([1, 1]);
});

test('a topic refused to this principal is tried once more on a new client, unless the caller says not now', async () => {
  const c = new RenewingClient(() => new StandIn());
  const refused = () => Object.assign(new Error('refused'), { type: 'TOPIC_AUTHORIZATION_FAILED' });
  let tries = 0;
  const call = async () => {
    if (tries++ === 0) throw refused();
    return 'ok';
  };
  expect(await c.use(call)).toBe('ok');
  expect(tries).toBe(2);
  tries = 0;
  await expect(c.use(call, { again: () => false })).rejects.toThrow('refused');
  expect(tries).toBe(1);
  expect(StandIn.made.map((s) => s.disconnects)).toEqual([1, 1]); // both given up on
  await c.close();
});

test('close waits for a connect under way before it disconnects, and the call it held hears of the close', async () => {
  const events: string[] = [];
  let connected!: () => void;
  const c = new RenewingClient(() => ({
    connect: () => new Promise<void>((r) => (connected = r)).then(() => void events.push('connected')),
    disconnect: async () => void events.push('disconnected'),
  }));
  const using = c.use(async () => 'ran');
  using.catch(() => undefined);
  await new Promise((r) => setImmediate(r));
  const closing = c.close();
  await new Promise((r) => setImmediate(r));
  expect(events).toEqual([]);
  connected();
  await closing;
  expect(events).toEqual(['connected', 'disconnected']);
  await expect(using).rejects.toThrow('Kafka client is closed');
});
