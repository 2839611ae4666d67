/**
 * The benchmark's baseline: what a user would write instead of the relay — a plain kafkajs consumer that
 * POSTs each record with undici and commits after each batch. No Temporal, no durability between the poll and
 * the HTTP call. Run as its own process so it gets the same CPU share as the relay's processes.
 */
import { Kafka, logLevel } from 'kafkajs';
import { Agent, request } from 'undici';
import { loadRelayConfig } from 'poimen-relay/internal/config/index';
import { mapLimit } from './measure';

async function main(): Promise<void> {
  const cfg = loadRelayConfig('ingester');
  const kafka = new Kafka({
    clientId: 'poimen-bench-baseline',
    brokers: cfg.kafka.brokers,
    logLevel: logLevel.ERROR,
  });
  const consumer = kafka.consumer({ groupId: cfg.kafka.groupId });
  const dispatcher = new Agent({ connections: 64 });
  const target = `${cfg.runsApi.url}/v1/runs`;
  await consumer.connect();
  const all = await kafka.admin().listTopics();
  await consumer.subscribe({
    topics: all.filter((t) => cfg.dispatchTopicPattern.test(t)),
    fromBeginning: true,
  });
  await consumer.run({
    partitionsConsumedConcurrently: 4,
    eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
      await mapLimit(batch.messages, 64, async (m) => {
        const d = JSON.parse(m.value?.toString('utf8') ?? '{}') as Record<string, unknown>;
        const res = await request(target, {
          dispatcher,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            workflow_ref: d.workflow_ref,
            input: d.input,
            goal_id: d.goal_id ?? null,
            dispatch_key: d.dispatch_key,
          }),
        });
        await res.body.dump();
      });
      const last = batch.messages[batch.messages.length - 1];
      if (last) resolveOffset(last.offset);
      await heartbeat();
    },
  });
  const stop = () => void consumer.disconnect().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

void main();
