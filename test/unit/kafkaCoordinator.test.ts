/**
 * A group coordinator that is not ready yet (src/kafka/coordinator.ts): its answers are told from the rest by
 * kafkajs's error types, and a request is made again while it loads, for a bounded while; anything else fails at
 * once.
 */
import { COORDINATOR_WAIT_MS, whenCoordinatorReady } from '../../src/kafka/coordinator';
import { groupCoordinatorNotReady } from '../../src/kafka/errors';

const protocolError = (type: string) =>
  Object.assign(new Error(type), { name: 'KafkaJSProtocolError', type });

test('loading, not available and not the coordinator are "not ready", also wrapped by a retrier', () => {
  for (const type of [
    'GROUP_LOAD_IN_PROGRESS',
    'GROUP_COORDINATOR_NOT_AVAILABLE',
    'NOT_COORDINATOR_FOR_GROUP',
  ])
    expect(groupCoordinatorNotReady(protocolError(type))).toBe(true);
  const wrapped = Object.assign(new Error('retries'), {
    name: 'KafkaJSNumberOfRetriesExceeded',
    cause: protocolError('GROUP_LOAD_IN_PROGRESS'),
  });
  expect(groupCoordinatorNotReady(wrapped)).toBe(true);
  expect(
    groupCoordinatorNotReady(Object.assign(new Error('x'), { name: 'KafkaJSGroupCoordinatorNotFound' })),
  ).toBe(true);
  expect(groupCoordinatorNotReady(protocolError('GROUP_AUTHORIZATION_FAILED'))).toBe(false);
  expect(groupCoordinatorNotReady(Object.assign(new Error('down'), { name: 'KafkaJSConnectionError' }))).toBe(
    false,
  );
});

test('a request answered "loading" is made again until it succeeds', async () => {
  let calls = 0;
  const answer = await whenCoordinatorReady(async () => {
    calls++;
    if (calls < 3) throw protocolError('GROUP_LOAD_IN_PROGRESS');
    return 'offsets';
  });
  expect(answer).toBe('offsets');
  expect(calls).toBe(3);
});

test('any other error fails the request at once', async () => {
  let calls = 0;
  const denied = protocolError('GROUP_AUTHORIZATION_FAILED');
  await expect(
    whenCoordinatorReady(async () => {
      calls++;
      throw denied;
    }),
  ).rejects.toBe(denied);
  expect(calls).toBe(1);
});

test('a coordinator that never becomes ready fails the request after the wait', async () => {
  jest.useFakeTimers();
  try {
    const loading = protocolError('GROUP_LOAD_IN_PROGRESS');
    let calls = 0;
    const result = whenCoordinatorReady(async () => {
      calls++;
      throw loading;
    });
    const settled = result.catch((err: unknown) => err);
    await jest.advanceTimersByTimeAsync(COORDINATOR_WAIT_MS + 5_000);
    expect(await settled).toBe(loading);
    expect(calls).toBeGreaterThan(3);
  } finally {
    jest.useRealTimers();
  }
});
