/**
 * Jest global teardown for the integration project: stops what the run started, in reverse of the setup. Every
 * other worker's local stack is the tests' own (test/support/workerStack.ts); worker 1's only when the global
 * setup started it. POIMEN_KEEP_STACK=1 keeps them all for a look afterwards.
 */
import { loadStackConfig } from '../../devstack/config';
import { consoleProgress } from '../../devstack/stack/progress';
import { LocalStack } from '../../devstack/stack/stack';
import { stopContainers } from './containers';
import { workerStacks } from './workerStack';

export default async function globalTeardown(): Promise<void> {
  if (process.env.POIMEN_TEST_STACK_MODE === 'testcontainers') await stopContainers();
  if (process.env.POIMEN_TEST_STACK_MODE !== 'local' || process.env.POIMEN_KEEP_STACK === '1') return;
  // Every worker stack in the state folder is the tests' own, whoever started worker 1's, this run's or one left by
  // an interrupted run with more workers.
  const others = workerStacks(process.env, (w) => consoleProgress(`tests worker ${w}`));
  const stopped = await Promise.allSettled(others.map((s) => s.down()));
  if (process.env.POIMEN_TEST_STOP_STACK === '1') {
    await new LocalStack(loadStackConfig(), consoleProgress('tests')).down();
  }
  const failed = stopped.flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []));
  if (failed.length > 0)
    throw new Error(`stopping a worker's stack: ${failed.map((e) => e.message).join('; ')}`);
}
