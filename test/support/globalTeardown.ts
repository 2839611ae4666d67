/**
 * Jest global teardown for the integration project: stops what the run started, in reverse of the setup. Every
 * other worker's local stack is the tests' own (test/support/workerStack.ts); worker 1's only when the global
 * setup started it. POIMEN_KEEP_STACK=1 keeps them all for a look afterwards.
 */
import fs from 'node:fs';
import { loadStackConfig } from '../../devstack/config';
import { consoleProgress } from '../../devstack/stack/progress';
import { LocalStack } from '../../devstack/stack/stack';
import { stopContainers } from './containers';
import { workerStack } from './workerStack';

export default async function globalTeardown(globalConfig: { maxWorkers: number }): Promise<void> {
  if (process.env.POIMEN_TEST_STACK_MODE === 'testcontainers') await stopContainers();
  if (process.env.POIMEN_TEST_STACK_MODE !== 'local' || process.env.POIMEN_KEEP_STACK === '1') return;
  // The other workers' stacks are the tests' own, whoever started worker 1's.
  const workers = globalConfig.maxWorkers;
  const others = Array.from({ length: Math.max(0, workers - 1) }, (_, i) =>
    workerStack(process.env, i + 2, consoleProgress(`tests worker ${i + 2}`)),
  ).filter((s) => fs.existsSync(s.stateDir));
  await Promise.all(others.map((s) => s.down()));
  if (process.env.POIMEN_TEST_STOP_STACK === '1') {
    await new LocalStack(loadStackConfig(), consoleProgress('tests')).down();
  }
}
