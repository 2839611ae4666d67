/**
 * How loud the ingester is when its kafkajs consumer crashes: a crash kafkajs restarts from by itself (a broker
 * outage outlasting the consumer's retries) is a WARN, repeated through the outage; one it leaves stopped (an ACL
 * revoked, a topic gone) is an ERROR, which the ingester then handles itself. The consumer is a stub that only
 * records its listeners; the real crash is covered by it_ingest_production and it_inbox_relay.
 */
import { Writable } from 'node:stream';
import { loadRelayConfig } from '../../src/config';
import { Ingester } from '../../src/ingest/ingester';
import { createLogger } from '../../src/logger';
import { createMetrics } from '../../src/metrics';
import { ingesterInternals } from '../support/ingesterInternals';

type Listener = (e: { payload: { error: Error; restart: boolean } }) => void;

async function crashLine(restart: boolean): Promise<Record<string, unknown>> {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const listeners = new Map<string, Listener>();
  const consumer = {
    events: { GROUP_JOIN: 'join', CRASH: 'crash' },
    on: (event: string, fn: Listener) => listeners.set(event, fn),
    connect: async () => undefined,
    subscribe: async () => undefined,
    run: async () => undefined,
  };
  const kafka = { admin: () => ({}), consumer: () => consumer } as never;
  const cfg = loadRelayConfig('ingester', {});
  const logger = createLogger('unit', 'info', { format: 'json', destination });
  const ing = new Ingester(cfg, kafka, {} as never, createMetrics({ defaultMetrics: false }), logger);
  await ingesterInternals(ing).startConsumer(['poimen.acme.dispatch']);
  // Handed over to nobody: the ingester's own restart of a stopped consumer is not what this test is about.
  ingesterInternals(ing).group.consumer = undefined;
  listeners.get('crash')!({ payload: { error: new Error('KafkaJSNumberOfRetriesExceeded'), restart } });
  return lines.find((l) => l.msg === 'consumer crashed')!;
}

test('a consumer crash kafkajs restarts from is a warning; one it does not restart from is an error', async () => {
  expect(await crashLine(true)).toMatchObject({ level: 'warn', restart: true });
  expect(await crashLine(false)).toMatchObject({ level: 'error', restart: false });
});
