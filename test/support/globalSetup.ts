/**
 * Jest global setup for the integration project. Brings up the services test/support/servicesChoice.js picks:
 * KAFKA_BROKERS/TEMPORAL_ADDRESS as they are (mode "external"), testcontainers (mode "testcontainers"), or the
 * project's own local stack (`npm run stack:up`, mode "local"), the path CI takes here. On the local stack this is
 * worker 1's; every other jest worker starts its own (test/support/stackEnvironment.ts). The choice reaches the
 * test files through environment variables, which jest workers inherit.
 */
import { loadStackConfig } from '../../devstack/config';
import { consoleProgress } from '../../devstack/stack/progress';
import { LocalStack } from '../../devstack/stack/stack';
import { startContainers } from './containers';
import { dockerAnswers, servicesGiven } from './servicesChoice';

export default async function globalSetup(globalConfig: { maxWorkers: number }): Promise<void> {
  const mode = servicesGiven() ? 'external' : dockerAnswers() ? 'testcontainers' : 'local';
  if (mode !== 'local' && globalConfig.maxWorkers > 1) {
    // One set of services: a fault test's restart would land in a neighbour's middle.
    throw new Error(
      `the integration tests run one file at a time on ${mode} services: run with -w 1 (not -w ${globalConfig.maxWorkers})`,
    );
  }
  if (mode === 'external') {
    process.env.POIMEN_TEST_STACK_MODE = 'external';
    process.stderr.write(
      `\n[tests] using KAFKA_BROKERS=${process.env.KAFKA_BROKERS} TEMPORAL_ADDRESS=${process.env.TEMPORAL_ADDRESS}\n`,
    );
    return;
  }
  if (mode === 'testcontainers') {
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
