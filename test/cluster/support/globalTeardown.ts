import { loadStackConfig } from '../../../devstack/config';
import { openStack } from '../../../devstack/stack/profiles';
import { consoleProgress } from '../../../devstack/stack/progress';

export default async function globalTeardown(): Promise<void> {
  if (process.env.POIMEN_TEST_STOP_STACK !== '1') return;
  await openStack(loadStackConfig(), 'cluster', consoleProgress('cluster tests')).down();
}
