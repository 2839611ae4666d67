/**
 * The fairness phase's flooding tenant's producer (fairness.ts), run as its own process as a tenant's producer
 * is: published from the bench's own process, the flood's encoding and sends held up the runs API double's
 * event loop in that process, and B's requests arriving in the flood's first second were stamped up to 230 ms
 * late, a wait that was the bench's, not the relay's. Sends BENCH_FLOOD_N records to BENCH_FLOOD_TOPIC in
 * 1000-record sends, as fast as Kafka takes them, then prints the milliseconds it took and the CPU milliseconds it
 * used meanwhile (on the bench's shared cores, CPU the relay did not get), and exits.
 */
import { Kafka, logLevel } from 'kafkajs';
import { dispatchValue } from './rig';

async function main(): Promise<void> {
  const topic = process.env.BENCH_FLOOD_TOPIC;
  const n = Number(process.env.BENCH_FLOOD_N);
  const brokers = (process.env.KAFKA_BROKERS ?? '').split(',').filter(Boolean);
  if (!topic || !Number.isInteger(n) || n <= 0 || brokers.length === 0) {
    throw new Error('set BENCH_FLOOD_TOPIC, BENCH_FLOOD_N (> 0) and KAFKA_BROKERS');
  }
  const producer = new Kafka({
    clientId: 'poimen-bench-flood',
    brokers,
    logLevel: logLevel.ERROR,
  }).producer();
  await producer.connect();
  // Connected first: the parent's clock starts at this line, not at the process's start.
  process.stdout.write('ready\n');
  await new Promise((r) => process.stdin.once('data', r));
  const start = Date.now();
  const cpuStart = process.cpuUsage();
  for (let i = 0; i < n; i += 1000) {
    const keys = Array.from({ length: Math.min(1000, n - i) }, (_, j) => `flood-${i + j}`);
    await producer.send({ topic, acks: 1, messages: keys.map((k) => ({ value: dispatchValue(k) })) });
  }
  const cpu = process.cpuUsage(cpuStart);
  process.stdout.write(`published ${Date.now() - start} ${Math.round((cpu.user + cpu.system) / 1000)}\n`);
  await producer.disconnect();
}

main().catch((err: unknown) => {
  process.stderr.write(`flood producer: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
