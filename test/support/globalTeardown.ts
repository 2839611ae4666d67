import { loadStackConfig } from '../../devstack/config';
import { consoleProgress } from '../../devstack/stack/progress';
import { LocalStack } from '../../devstack/stack/stack';
import { stopContainers } from './containers';

export default async function globalTeardown(): Promise<void> {
  if (process.env.POIMEN_TEST_STACK_MODE === 'testcontainers') await stopContainers();
  if (
    process.env.POIMEN_TEST_STACK_MODE === 'local' &&
    process.env.POIMEN_TEST_STOP_STACK === '1' &&
    process.env.POIMEN_KEEP_STACK !== '1'
  ) {
    await new LocalStack(loadStackConfig(), consoleProgress('tests')).down();
  }
}
