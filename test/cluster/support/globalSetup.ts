/**
 * Global setup of the cluster suite: the stack's cluster profile, started (or found running) on its own ports,
 * and its endpoints handed to the test files the way the integration suite's are (KAFKA_BROKERS and
 * TEMPORAL_ADDRESS), so the shared harness runs the relay against three brokers and the real Temporal server.
 */
import { loadStackConfig } from '../../../devstack/config';
import { openStack, stackEndpoints } from '../../../devstack/stack/profiles';
import { consoleProgress } from '../../../devstack/stack/progress';

export default async function globalSetup(): Promise<void> {
  const cfg = loadStackConfig();
  const stack = openStack(cfg, 'cluster', consoleProgress('cluster tests'));
  const before = await stack.status();
  process.stderr.write('\n');
  await stack.up();
  const endpoints = stackEndpoints(cfg, 'cluster');
  process.env.POIMEN_TEST_STACK_MODE = 'local';
  process.env.POIMEN_TEST_STACK_PROFILE = 'cluster';
  process.env.KAFKA_BROKERS = endpoints.kafka.bootstrap;
  process.env.TEMPORAL_ADDRESS = endpoints.temporal.address;
  // Leave a cluster the developer already had running; stop only what this run started.
  process.env.POIMEN_TEST_STOP_STACK = before.every((s) => !s.running) ? '1' : '0';
}
