/**
 * What a call that ended by a timeout counts (src/workflows/ending.ts, `endingOf`): the attempts of the failure
 * before it, those its last heartbeat lists (an attempt heartbeats its own failure before the failure reaches the
 * server) and the one beating (it names itself as it sends), and the timed-out attempt itself when it ran.
 */
import { ActivityFailure, TimeoutFailure, defaultPayloadConverter } from '@temporalio/common';
import { DEFAULT_DISPATCH_POLICY } from '../../src/contract/workflow';
import { endingOf } from '../../src/workflows/ending';

const policy = { ...DEFAULT_DISPATCH_POLICY, maxDurationMs: 20_000 };
const entry = (attempt: number) => ({
  attempt,
  at: null,
  http_status: 503,
  error: 'HTTP 503',
  duration_ms: 5,
});

function timedOut(o: {
  type: 'SCHEDULE_TO_CLOSE' | 'START_TO_CLOSE';
  causeAttempt?: number;
  beat?: unknown;
}) {
  const timeout = new TimeoutFailure(`activity ${o.type} timeout`, o.beat, o.type);
  if (o.causeAttempt !== undefined) {
    const details = {
      payloads: [defaultPayloadConverter.toPayload({ httpStatus: 503, attempt: o.causeAttempt })],
    };
    timeout.failure = {
      message: 'timeout',
      cause: { message: 'HTTP 503', applicationFailureInfo: { details } },
    };
  }
  return new ActivityFailure(
    'activity timed out',
    'postRunWithInputBytes',
    'call-0-after-0',
    'TIMEOUT',
    'w',
    timeout,
  );
}

test('the failure before the timeout, no heartbeat: its attempts', () => {
  expect(endingOf(timedOut({ type: 'SCHEDULE_TO_CLOSE', causeAttempt: 2 }), policy)).toMatchObject({
    retryCount: 2,
    budgetSpent: true,
  });
});

test('a heartbeat listing an attempt after the failure the server kept: counted', () => {
  const beat = { attempts: [entry(1), entry(2)], attempts_omitted: 0, current: { attempt: 2, at: null } };
  expect(endingOf(timedOut({ type: 'SCHEDULE_TO_CLOSE', causeAttempt: 1, beat }), policy).retryCount).toBe(2);
});

test('a heartbeat of an attempt sending when the budget ended (a worker killed mid-call): counted', () => {
  const beat = { attempts: [entry(1), entry(2)], attempts_omitted: 0, current: { attempt: 3, at: null } };
  expect(endingOf(timedOut({ type: 'SCHEDULE_TO_CLOSE', causeAttempt: 2, beat }), policy).retryCount).toBe(3);
});

test('attempts the history left out count too', () => {
  const beat = { attempts: [entry(1), entry(9)], attempts_omitted: 7, current: { attempt: 9, at: null } };
  expect(endingOf(timedOut({ type: 'SCHEDULE_TO_CLOSE', causeAttempt: 8, beat }), policy).retryCount).toBe(9);
});

test('a timed-out attempt that ran (start-to-close) is one more than the failure before it', () => {
  expect(endingOf(timedOut({ type: 'START_TO_CLOSE', causeAttempt: 2 }), policy).retryCount).toBe(3);
});
