import { loadStackConfig } from '../../../src/config';
import { openStack } from '../../../src/devstack/stack/profiles';
import { consoleProgress } from '../../../src/devstack/stack/progress';

export default async function globalTeardown(): Promise<void> {
  if (process.env.POIMEN_TEST_STOP_STACK !== '1') return;
  await openStack(loadStackConfig(), 'cluster', consoleProgress('cluster tests')).down();
}
