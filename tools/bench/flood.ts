/**
 * The parent's side of tenant A's flood in a fairness round (./fairness.ts): the producer process
 * (./floodProducer.ts) started and connected before the windows open, told when to publish, and what it reports.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { PACKAGE_ROOT } from 'poimen-relay/internal/version';
import type { BenchTarget } from './rig';

/**
 * Tenant A's flood producer, connected and waiting: `publish` sends its `n` records and resolves with the ms the
 * sends took. A process of its own: from the bench's process its sends held up the runs API double's receipts.
 */
export async function startFlood(t: BenchTarget, topic: string, n: number) {
  const script = path.join(PACKAGE_ROOT, 'dist-tools', 'tools', 'bench', 'floodProducer.js');
  const child = spawn(process.execPath, [script], {
    env: {
      ...process.env,
      KAFKA_BROKERS: t.kafkaBrokers,
      BENCH_FLOOD_TOPIC: topic,
      BENCH_FLOOD_N: String(n),
    },
    stdio: ['pipe', 'pipe', fs.openSync(path.join(t.logsDir, 'bench-flood-producer.log'), 'a')],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const lines = readline.createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async (what: string, prefix: string): Promise<string> => {
    const line = await Promise.race([lines.next(), exited.then(() => ({ done: true as const, value: '' }))]);
    if (line.done || !line.value.startsWith(prefix)) {
      child.kill('SIGKILL');
      throw new Error(`the flood producer ended before ${what} (bench-flood-producer.log says why)`);
    }
    return line.value.slice(prefix.length);
  };
  await next('it connected', 'ready');
  return {
    /** The ms the sends took, and the CPU ms the producer used meanwhile. */
    publish: async (): Promise<{ ms: number; cpuMs: number }> => {
      child.stdin!.write('go\n');
      const [ms, cpuMs] = (await next('its records were sent', 'published ')).split(' ').map(Number);
      return { ms: ms!, cpuMs: cpuMs! };
    },
    stop: async (): Promise<void> => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
