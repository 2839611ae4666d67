/**
 * Contract §6 `attempts`, in the pure module every writer and reader uses: oldest first, errors cut to 512 bytes,
 * past 50 attempts the first 10 and the last 40 kept with `attempts_omitted`, and every attempt number accounted
 * for (a number without a record shows as "no outcome recorded", never as a gap).
 */
import {
  type AttemptEntry,
  type AttemptHistory,
  NO_OUTCOME,
  attemptError,
  emptyHistory,
  historyFrom,
  historyOfBeat,
  mergedHistory,
  throughAttempt,
  withAttempt,
} from '../../src/contract/attempts';
import { defaultPayloadConverter } from '@temporalio/common';
import { buildDlqRecord, parseDlqRecord } from '../../src/contract';
import { historyOfFailure } from '../../src/temporal/callAttempts';

const entry = (attempt: number, status: number | null = 503): AttemptEntry => ({
  attempt,
  at: new Date(Date.UTC(2026, 11, 1, 10, 0, attempt)).toISOString(),
  http_status: status,
  error: `runs API answered ${status}`,
  duration_ms: 10,
});

function historyOf(n: number): AttemptHistory {
  let h = emptyHistory();
  for (let i = 1; i <= n; i++) h = withAttempt(h, entry(i));
  return h;
}

test('up to 50 attempts are all kept, oldest first', () => {
  const h = historyOf(50);
  expect(h.attempts.map((a) => a.attempt)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  expect(h.attempts_omitted).toBe(0);
});

test('past 50, the first 10 and the last 40 are kept and attempts_omitted counts the rest', () => {
  const h = historyOf(123);
  expect(h.attempts).toHaveLength(50);
  expect(h.attempts.slice(0, 10).map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  expect(h.attempts[10]!.attempt).toBe(84);
  expect(h.attempts[49]!.attempt).toBe(123);
  expect(h.attempts_omitted).toBe(73);
});

test('an error excerpt is at most 512 bytes of UTF-8, cut on a character boundary', () => {
  expect(attemptError('short')).toBe('short');
  const cut = attemptError('é'.repeat(400));
  expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(512);
  expect(cut.endsWith('…')).toBe(true);
  expect(cut).not.toContain('\uFFFD');
});

test('every attempt number is accounted for: a missing one is "no outcome recorded"', () => {
  const h = throughAttempt(withAttempt(emptyHistory(), entry(2)), 3);
  expect(h.attempts.map((a) => [a.attempt, a.error === NO_OUTCOME])).toEqual([
    [1, true],
    [2, false],
    [3, true],
  ]);
  // Numbers the cap left out are not filled back in.
  const capped = throughAttempt(historyOf(60), 60);
  expect(capped).toEqual(historyOf(60));
});

test('the attempt a heartbeat was written during, when older than the reader, is lost with its start time', () => {
  const beat = { ...historyOf(1), current: { attempt: 2, at: '2026-12-01T10:00:05.000Z' } };
  expect(historyOfBeat(beat, 3)!.attempts[1]).toEqual({
    attempt: 2,
    at: '2026-12-01T10:00:05.000Z',
    http_status: null,
    error: NO_OUTCOME,
    duration_ms: null,
  });
  // The attempt itself reading its own heartbeat: still running, not lost.
  expect(historyOfBeat(beat, 2)!.attempts).toHaveLength(1);
});

test('histories read from several places merge, an outcome winning over "no outcome recorded"', () => {
  const lost = throughAttempt(withAttempt(emptyHistory(), entry(1)), 2);
  const known = withAttempt(historyOf(1), entry(2, 429));
  expect(mergedHistory(lost, known)!.attempts.map((a) => a.http_status)).toEqual([503, 429]);
  expect(mergedHistory(undefined, undefined)).toBeUndefined();
});

test('a dead letter carries the history, and tools read it back; attempts_omitted only when the cap left some out', () => {
  const base = {
    id: 'id-1',
    timestamp: 0,
    type: 'dispatch_failure' as const,
    tenant: 'acme',
    dispatchKey: 'd-1',
    error: 'refused',
    source: { topic: 'poimen.acme.dispatch', partition: 0, offset: '4', timestamp: '0' },
    value: '{}',
  };
  const short = buildDlqRecord({ ...base, attempts: historyOf(3) });
  expect(short.attempts).toHaveLength(3);
  expect(short).not.toHaveProperty('attempts_omitted');
  const long = buildDlqRecord({ ...base, attempts: historyOf(70) });
  expect(long.attempts_omitted).toBe(20);
  expect(parseDlqRecord(JSON.stringify(long))).toEqual(long);
  // Records written before the history was kept have none.
  expect(parseDlqRecord(JSON.stringify(buildDlqRecord(base)))).not.toHaveProperty('attempts');
  expect(historyFrom({ attempts: [{ attempt: 'x' }, entry(1)] })!.attempts).toEqual([entry(1)]);
});

describe('read back from the failure a call ended with', () => {
  const payloads = (v: unknown) => ({ payloads: [defaultPayloadConverter.toPayload(v)!] });

  test('a timeout: the last heartbeat names the timed-out attempt, the failure before it carries the rest', () => {
    // Attempt 52 began (heartbeat with the history of 1–51 and itself as current), then timed out.
    const before = historyOf(51);
    const failure = {
      message: 'activity StartToClose timeout',
      timeoutFailureInfo: {
        lastHeartbeatDetails: payloads({
          ...before,
          current: { attempt: 52, at: '2026-12-01T11:00:00.000Z' },
        }),
      },
      cause: {
        message: 'runs API answered 503',
        applicationFailureInfo: { details: payloads({ httpStatus: 503, attempt: 51, ...before }) },
      },
    };
    const h = historyOfFailure(failure)!;
    expect(h.attempts).toHaveLength(50);
    expect(h.attempts[49]).toEqual({
      attempt: 52,
      at: '2026-12-01T11:00:00.000Z',
      http_status: null,
      error: NO_OUTCOME,
      duration_ms: null,
    });
    // 52 attempts: 50 kept, 2 left out, counted once although both sources had left some out.
    expect(h.attempts_omitted).toBe(2);
  });

  test('a failure written before histories were kept still gives its own attempt', () => {
    const failure = {
      message: 'runs API answered 422: refused',
      applicationFailureInfo: { details: payloads({ httpStatus: 422, attempt: 3 }) },
    };
    expect(throughAttempt(historyOfFailure(failure)!, 3).attempts).toEqual([
      expect.objectContaining({ attempt: 1, error: NO_OUTCOME }),
      expect.objectContaining({ attempt: 2, error: NO_OUTCOME }),
      { attempt: 3, at: null, http_status: 422, error: 'runs API answered 422: refused', duration_ms: null },
    ]);
  });
});
