/**
 * A consumer that could not start (Kafka down, a broker restarting, a token endpoint out) when the dispatch topics
 * changed or at start is started again: the ingester never settles on a subscription it is not consuming.
 */
import { KafkaJSConnectionError } from 'kafkajs';
import { loadRelayConfig } from '../../src/config';
import { Ingester } from '../../src/ingest/ingester';
import { createLogger } from '../../src/logger';
import { createMetrics } from '../../src/metrics';

const silent = createLogger('ingesterResubscribe', 'silent');
const TOPICS = ['poimen.acme.dispatch', 'poimen.newco.dispatch'];

/** A kafkajs client whose consumers fail their first `failing` connects, as during a broker outage. */
function kafkaWith(failing: number) {
  const seen = { connects: 0, runs: 0, disconnects: 0 };
  const consumer = () => ({
    events: { GROUP_JOIN: 'join', CRASH: 'crash', END_BATCH_PROCESS: 'end' },
    on: () => undefined,
    connect: async () => {
      if (++seen.connects <= failing)
        throw new KafkaJSConnectionError('Connection error: connect ECONNREFUSED');
    },
    subscribe: async () => undefined,
    run: async () => void seen.runs++,
    disconnect: async () => void seen.disconnects++,
    pause: () => undefined,
  });
  const admin = () => ({
    connect: async () => undefined,
    listTopics: async () => TOPICS,
    disconnect: async () => {},
  });
  return { kafka: { admin, consumer } as never, seen };
}

function ingester(kafka: never): Ingester {
  const cfg = loadRelayConfig('ingester', { POIMEN_TOPIC_REFRESH_MS: '3600000' });
  return new Ingester(cfg, kafka, {} as never, createMetrics({ defaultMetrics: false }), silent);
}

test('topics applied while the consumer cannot connect are applied again at the next refresh', async () => {
  const { kafka, seen } = kafkaWith(1);
  const ing = ingester(kafka);
  const apply = (t: string[]) =>
    (ing as unknown as { applyTopics(t: string[]): Promise<void> }).applyTopics(t);
  try {
    await expect(apply(TOPICS)).rejects.toThrow(/ECONNREFUSED/); // the watcher logs it and refreshes again
    expect(ing.ready()).toBe(false);
    await apply(TOPICS); // Kafka is back; the listing is the same
    expect(seen).toEqual({ connects: 2, runs: 1, disconnects: 1 }); // the failed consumer closed, a new one runs
    await apply(TOPICS); // and once it runs, the same listing changes nothing
    expect(seen).toEqual({ connects: 2, runs: 1, disconnects: 1 });
  } finally {
    await ing.close();
  }
});

test('a start whose consumer cannot connect at first keeps trying until it runs', async () => {
  const { kafka, seen } = kafkaWith(2);
  const ing = ingester(kafka);
  try {
    await ing.start();
    expect(seen).toEqual({ connects: 3, runs: 1, disconnects: 2 });
  } finally {
    await ing.close();
  }
}, 20_000);
