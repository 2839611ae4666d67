/**
 * What every entry point prints when it fails (src/errors.ts, failureText): a configuration, usage or service
 * problem is its message alone; anything else is a bug and keeps its stack trace.
 */
import { ConfigError, NotFoundError, StackError, UnreachableError, failureText } from '../../src/errors';

test('a user-facing error is its one line, without a stack', () => {
  for (const err of [
    new ConfigError('METRICS_PORT', '= "abc": must be a whole number'),
    new StackError('kafka did not start'),
    new NotFoundError('no such dispatch'),
    new UnreachableError('kafka at 127.0.0.1:1 is unreachable'),
  ]) {
    expect(failureText(err)).toBe(err.message);
  }
});

test('any other error is a bug: its stack trace, or the value itself when it is not an Error', () => {
  const bug = new TypeError('x is undefined');
  expect(failureText(bug)).toBe(bug.stack);
  expect(failureText(bug)).toMatch(/\n\s+at /);
  const stackless = new Error('no stack');
  stackless.stack = undefined;
  expect(failureText(stackless)).toBe('no stack');
  expect(failureText('a string')).toBe('a string');
});
