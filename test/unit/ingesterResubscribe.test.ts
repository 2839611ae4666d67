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

type Crash = (e: { payload: { error: Error; restart: boolean } }) => void;

/** A kafkajs client whose consumers fail the connects `fails` picks (by their count), as during a broker outage. */
function kafkaWith(fails: (n: number) => boolean) {
  const seen = { connects: 0, runs: 0, disconnects: 0, adminConnects: 0 };
  const crashes: Crash[] = [];
  const consumer = () => ({
    events: { GROUP_JOIN: 'join', CRASH: 'crash', END_BATCH_PROCESS: 'end' },
    on: (event: string, handler: Crash) => void (event === 'crash' && crashes.push(handler)),
    connect: async () => {
      if (fails(++seen.connects)) throw new KafkaJSConnectionError('Connection error: connect ECONNREFUSED');
    },
    subscribe: async () => undefined,
    run: async () => void seen.runs++,
    disconnect: async () => void seen.disconnects++,
    pause: () => undefined,
  });
  const admin = () => ({
    connect: async () => void seen.adminConnects++,
    listTopics: async () => TOPICS,
    disconnect: async () => undefined,
  });
  return { kafka: { admin, consumer } as never, seen, crashes };
}

function ingester(kafka: never): Ingester {
  const cfg = loadRelayConfig('ingester', { POIMEN_TOPIC_REFRESH_MS: '3600000' });
  return new Ingester(cfg, kafka, {} as never, createMetrics({ defaultMetrics: false }), silent);
}

test('topics applied while the consumer cannot connect are applied again at the next refresh', async () => {
  const { kafka, seen } = kafkaWith((n) => n === 1);
  const ing = ingester(kafka);
  const apply = (t: string[]) =>
    (ing as unknown as { applyTopics(t: string[]): Promise<void> }).applyTopics(t);
  try {
    await expect(apply(TOPICS)).rejects.toThrow(/ECONNREFUSED/); // the watcher logs it and refreshes again
    expect(ing.ready()).toBe(false);
    await apply(TOPICS); // Kafka is back; the listing is the same
    expect(seen).toMatchObject({ connects: 2, runs: 1, disconnects: 1 }); // the failed one closed, a new one runs
    await apply(TOPICS); // and once it runs, the same listing changes nothing
    expect(seen).toMatchObject({ connects: 2, runs: 1, disconnects: 1 });
  } finally {
    await ing.close();
  }
});

test('a start whose consumer cannot connect at first keeps trying until it runs', async () => {
  const { kafka, seen } = kafkaWith((n) => n <= 2);
  const ing = ingester(kafka);
  try {
    await ing.start();
    expect(seen).toMatchObject({ connects: 3, runs: 1, disconnects: 2 });
  } finally {
    await ing.close();
  }
}, 20_000);

test("a failed topic change that a crash's restart then started leaves the running consumer alone", async () => {
  const { kafka, seen, crashes } = kafkaWith((n) => n === 2 || n === 3);
  const ing = ingester(kafka);
  const p = ing as unknown as { applyTopics(t: string[]): Promise<void>; restarting: Promise<void> };
  try {
    await p.applyTopics(TOPICS.slice(0, 1)); // consumer 1 runs
    crashes[0]!({ payload: { error: new Error('an ACL revoked'), restart: false } }); // its restart waits 1 s
    p.restarting = p.restarting.then(() => p.applyTopics(TOPICS)).catch(() => undefined); // a new tenant's topic
    // The restart's start fails (2), the topic change's too (3), the next restart's succeeds (4).
    while (seen.runs < 2) await new Promise((r) => setTimeout(r, 20));
    await p.restarting;
    await p.applyTopics(TOPICS); // the next listing, unchanged
    expect(seen).toMatchObject({ connects: 4, runs: 2 });
  } finally {
    await ing.close();
  }
}, 20_000);

test('a close during the start loop ends it: no Kafka connection, watcher or monitor after close', async () => {
  const { kafka, seen } = kafkaWith(() => true);
  const ing = ingester(kafka);
  const started = ing.start();
  await new Promise((r) => setTimeout(r, 100)); // in the first retry's wait
  await ing.close();
  const connects = seen.adminConnects;
  await started;
  const p = ing as unknown as { watcher?: NodeJS.Timeout };
  expect({ adminConnects: seen.adminConnects - connects, watcher: p.watcher !== undefined }).toEqual({
    adminConnects: 0,
    watcher: false,
  });
});

test("a close during a crash restart's backoff ends the wait: SIGTERM is not held for up to 30 s", async () => {
  const { kafka, seen, crashes } = kafkaWith(() => false);
  const ing = ingester(kafka);
  const p = ing as unknown as { applyTopics(t: string[]): Promise<void>; crashRestarts: number };
  await p.applyTopics(TOPICS);
  p.crashRestarts = 10; // a long crash loop: its next restart waits the 30 s ceiling
  crashes[0]!({ payload: { error: new Error('an ACL revoked'), restart: false } });
  expect(ing.readinessDetail()).toMatch(/restarting in 30000 ms/);
  await new Promise((r) => setTimeout(r, 100)); // the restart is in its wait, not about to start it
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    ing.close().then(() => 'closed'),
    new Promise((r) => (timer = setTimeout(r, 5_000, 'still waiting'))),
  ]);
  clearTimeout(timer);
  expect(outcome).toBe('closed');
  expect(seen).toMatchObject({ runs: 1, disconnects: 1 }); // no restart after the close
}, 40_000);
