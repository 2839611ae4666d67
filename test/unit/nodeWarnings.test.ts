/**
 * The Kafka client's TimeoutNegativeWarning is dropped once an executable installs the filter
 * (src/kafka/nodeWarnings.ts); every other warning still reaches Node's own emitWarning (stderr, listeners).
 */
import { dropKafkaTimerWarnings } from '../../src/kafka/nodeWarnings';

const installed = () =>
  (process.emitWarning as { poimenDropsTimerWarnings?: true }).poimenDropsTimerWarnings === true;

test('drops TimeoutNegativeWarning however it is raised, passes every other warning on', () => {
  const original = process.emitWarning;
  const reached: unknown[][] = [];
  // Node's emitWarning, as the filter finds it: a recorder here.
  process.emitWarning = ((...args: unknown[]) => void reached.push(args)) as typeof process.emitWarning;
  const undo = dropKafkaTimerWarnings();
  try {
    process.emitWarning('-5 is a negative number.', 'TimeoutNegativeWarning');
    process.emitWarning('-5 is a negative number.', { type: 'TimeoutNegativeWarning' });
    const named = new Error('-5 is a negative number.');
    named.name = 'TimeoutNegativeWarning';
    process.emitWarning(named);
    process.emitWarning('kept', 'ExperimentalWarning');
    process.emitWarning('kept too', { type: 'DeprecationWarning', code: 'DEP0000' });
    expect(reached).toEqual([
      ['kept', 'ExperimentalWarning'],
      ['kept too', { type: 'DeprecationWarning', code: 'DEP0000' }],
    ]);
    // Installing twice wraps once.
    dropKafkaTimerWarnings()();
    expect(installed()).toBe(true);
  } finally {
    undo();
    process.emitWarning = original;
  }
  expect(installed()).toBe(false);
});
