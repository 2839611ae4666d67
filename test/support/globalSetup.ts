/**
 * Jest global setup for the integration project. Picks the real services the tests run on:
 *   1. KAFKA_BROKERS and TEMPORAL_ADDRESS set → use them as they are (mode "external");
 *   2. else a Docker engine answers → testcontainers (mode "testcontainers");
 *   3. else the project's own local stack (`npm run stack:up`), the path CI takes here (mode "local").
 * The choice reaches the test files through environment variables, which jest workers inherit.
 */
import { spawnSync } from 'node:child_process';
import { loadStackConfig } from '../../devstack/config';
import { consoleProgress } from '../../devstack/stack/progress';
import { LocalStack } from '../../devstack/stack/stack';
import { startContainers } from './containers';

function dockerAnswers(): boolean {
  const probe = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], {
    stdio: 'ignore',
    timeout: 5000,
  });
  return probe.status === 0;
}

export default async function globalSetup(): Promise<void> {
  if (process.env.KAFKA_BROKERS && process.env.TEMPORAL_ADDRESS) {
    process.env.POIMEN_TEST_STACK_MODE = 'external';
    process.stderr.write(
      `\n[tests] using KAFKA_BROKERS=${process.env.KAFKA_BROKERS} TEMPORAL_ADDRESS=${process.env.TEMPORAL_ADDRESS}\n`,
    );
    return;
  }
  if (dockerAnswers()) {
    const started = await startContainers();
    process.env.POIMEN_TEST_STACK_MODE = 'testcontainers';
    process.env.KAFKA_BROKERS = started.kafkaBrokers;
    process.env.TEMPORAL_ADDRESS = started.temporalAddress;
    return;
  }
  const cfg = loadStackConfig();
  const stack = new LocalStack(cfg, consoleProgress('tests'));
  const before = await stack.status();
  process.stderr.write('\n');
  await stack.up();
  process.env.POIMEN_TEST_STACK_MODE = 'local';
  process.env.KAFKA_BROKERS = stack.services.kafka.address;
  process.env.TEMPORAL_ADDRESS = stack.services.temporal.address;
  // Leave a stack the developer already had running; stop only what this run started.
  process.env.POIMEN_TEST_STOP_STACK = before.every((s) => !s.running) ? '1' : '0';
}
