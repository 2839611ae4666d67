/**
 * Reading a dispatch's call back from its history, newest first (src/temporal/callAttempts.ts): the dead letter and
 * `dispatch status` take a failed call's attempts from its last failure event; a completed call's attempt and the
 * failure before it from its ActivityTaskStarted event. Pages are read until the event is found, and no further.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { NO_OUTCOME } from '../../src/contract/attempts';
import { completedCall, lastCallHistory } from '../../src/temporal/callAttempts';

type Event = temporal.api.history.v1.IHistoryEvent;
type Request = temporal.api.workflowservice.v1.IGetWorkflowExecutionHistoryReverseRequest;

const payloads = (value: unknown) => ({ payloads: [defaultPayloadConverter.toPayload(value)] });

/** A reverse-history reader over pages of events (newest first), recording the requests it was asked. */
function reader(pages: Event[][]) {
  const requests: Request[] = [];
  const read = async (req: Request) => {
    requests.push(req);
    const index = req.nextPageToken ? Number(Buffer.from(req.nextPageToken).toString()) : 0;
    const next = index + 1 < pages.length ? new Uint8Array(Buffer.from(String(index + 1))) : new Uint8Array();
    return { history: { events: pages[index] ?? [] }, nextPageToken: next };
  };
  return { read, requests };
}

const completed: Event = { workflowExecutionCompletedEventAttributes: {} };
const task: Event = { workflowTaskCompletedEventAttributes: {} };
const activityCompleted: Event = { activityTaskCompletedEventAttributes: {} };
const started = (attempt: number, lastFailure?: temporal.api.failure.v1.IFailure): Event => ({
  activityTaskStartedEventAttributes: { attempt, lastFailure },
});
const scheduled = (activityId: string): Event => ({ activityTaskScheduledEventAttributes: { activityId } });
const answered503 = {
  message: 'runs API answered 503: upstream busy',
  applicationFailureInfo: { details: payloads({ httpStatus: 503, attempt: 1 }) },
};

describe('a completed call', () => {
  test('succeeded on its first attempt: attempt 1, no failure before it', async () => {
    const { read } = reader([[completed, task, activityCompleted, started(1)]]);
    await expect(completedCall(read, 'default', 'w', 'r')).resolves.toEqual({
      attempt: 1,
      lastFailure: null,
    });
  });

  test('succeeded on a retry: that attempt, and the failure of the one before, found on a later page', async () => {
    const { read, requests } = reader([
      [completed, task, activityCompleted],
      [started(2, answered503), scheduled('1')],
      [started(9)],
    ]);
    const call = await completedCall(read, 'default', 'w', 'r');
    expect(call?.attempt).toBe(2);
    expect(call?.lastFailure?.message).toBe('runs API answered 503: upstream busy');
    // Stops at the page that held it.
    expect(requests).toHaveLength(2);
    expect(requests[0]).toMatchObject({ namespace: 'default', execution: { workflowId: 'w', runId: 'r' } });
  });

  test('succeeded after a hold: its attempt counted after those its activity id names', async () => {
    const { read } = reader([
      [completed, task, activityCompleted, started(2, answered503), scheduled('call-1-after-3')],
    ]);
    await expect(completedCall(read, 'default', 'w', 'r')).resolves.toMatchObject({ attempt: 5 });
  });

  test('a history without a started call gives nothing', async () => {
    const { read } = reader([[completed, task]]);
    await expect(completedCall(read, 'default', 'w', 'r')).resolves.toBeUndefined();
  });
});

describe("a failed call's attempts", () => {
  test('come from the newest failure event, and the reading stops there', async () => {
    const older = {
      activityTaskFailedEventAttributes: { failure: { message: 'older', applicationFailureInfo: {} } },
    };
    const newest = {
      activityTaskFailedEventAttributes: {
        failure: {
          message: 'runs API answered 422: refused',
          applicationFailureInfo: { details: payloads({ httpStatus: 422, attempt: 3 }) },
        },
      },
    };
    const { read, requests } = reader([[task], [newest, older], [older]]);
    const h = await lastCallHistory(read, 'default', 'w', 'r');
    expect(h?.attempts).toEqual([
      { attempt: 3, at: null, http_status: 422, error: 'runs API answered 422: refused', duration_ms: null },
    ]);
    expect(requests).toHaveLength(2);
  });

  test('a failure event without a history gives none, without reading on', async () => {
    const bare = { activityTaskFailedEventAttributes: { failure: { message: 'x' } } };
    const later = {
      activityTaskFailedEventAttributes: {
        failure: {
          message: 'y',
          applicationFailureInfo: { details: payloads({ httpStatus: 503, attempt: 1 }) },
        },
      },
    };
    const { read, requests } = reader([[bare], [later]]);
    await expect(lastCallHistory(read, 'default', 'w', 'r')).resolves.toBeUndefined();
    expect(requests).toHaveLength(1);
  });

  test('a call after a hold that timed out before it held the earlier attempts: they come from the held failure', async () => {
    const entry = (attempt: number) => ({
      attempt,
      at: null,
      http_status: 503,
      error: 'HTTP 503',
      duration_ms: 1,
    });
    const heldEvent = {
      activityTaskFailedEventAttributes: {
        failure: {
          message: 'held: tenant acme is paused since 2026-12-06T08:00:00.000Z',
          applicationFailureInfo: {
            type: 'TenantPaused',
            details: payloads({
              attempt: 2,
              httpStatus: 503,
              attempts: [entry(1), entry(2)],
              attempts_omitted: 0,
            }),
          },
        },
      },
    };
    const timedOut = { activityTaskTimedOutEventAttributes: { failure: { message: 'activity timeout' } } };
    const { read } = reader([
      [task, timedOut],
      [task, heldEvent],
    ]);
    // Two attempts made: the timed-out call holds none of them.
    expect((await lastCallHistory(read, 'default', 'w', 'r', 2))?.attempts.map((a) => a.attempt)).toEqual([
      1, 2,
    ]);
    // A call that could not read them heartbeated them without outcome: the held failure's entries win.
    const blind = {
      activityTaskFailedEventAttributes: {
        failure: {
          message: 'HTTP 503',
          applicationFailureInfo: {
            details: payloads({
              attempt: 3,
              httpStatus: 503,
              attempts: [
                { ...entry(1), http_status: null, error: NO_OUTCOME },
                { ...entry(2), http_status: null, error: NO_OUTCOME },
                entry(3),
              ],
              attempts_omitted: 0,
            }),
          },
        },
      },
    };
    const merged = await lastCallHistory(
      reader([
        [task, blind],
        [task, heldEvent],
      ]).read,
      'default',
      'w',
      'r',
      3,
    );
    expect(merged?.attempts.map((a) => a.error)).toEqual(['HTTP 503', 'HTTP 503', 'HTTP 503']);
    // Without a count to reach, the reading stops at the newest failure, as before.
    await expect(lastCallHistory(read, 'default', 'w', 'r')).resolves.toBeUndefined();
  });

  test('held twice, the second time without the outcomes of the first: they come from the older held failure', async () => {
    const entry = (attempt: number, known: boolean) => ({
      attempt,
      at: known ? '2026-12-06T07:59:00.000Z' : null,
      http_status: known ? 503 : null,
      error: known ? 'HTTP 503' : NO_OUTCOME,
      duration_ms: known ? 5 : null,
    });
    const failed = (type: string, attempt: number, attempts: ReturnType<typeof entry>[]): Event => ({
      activityTaskFailedEventAttributes: {
        failure: {
          message: type,
          applicationFailureInfo: {
            type,
            details: payloads({ attempt, httpStatus: null, attempts, attempts_omitted: 0 }),
          },
        },
      },
    });
    // call-0 made attempts 1-3, answered, then was held; call-1-after-3 could not read them (Temporal busy) and was
    // held again before it sent; call-2-after-3 read that second hold's entries, made 4 and 5 and reached the cap.
    const first = failed('TenantPaused', 3, [entry(1, true), entry(2, true), entry(3, true)]);
    const second = failed('TenantPaused', 3, [entry(1, false), entry(2, false), entry(3, false)]);
    const last = failed('RunsApiUnavailable', 5, [
      entry(1, false),
      entry(2, false),
      entry(3, false),
      entry(4, true),
      entry(5, true),
    ]);
    const pages = [[task, last, scheduled('call-2-after-3')], [second, scheduled('call-1-after-3')], [first]];
    const deadLetter = await lastCallHistory(reader(pages).read, 'default', 'w', 'r', 5);
    expect(deadLetter?.attempts.map((a) => a.http_status)).toEqual([503, 503, 503, 503, 503]);
    // What call-2-after-3's first attempt reads as the history before it: the newest hold, completed the same way.
    const prior = await lastCallHistory(reader(pages.slice(1)).read, 'default', 'w', 'r');
    expect(prior?.attempts.map((a) => a.error)).toEqual(['HTTP 503', 'HTTP 503', 'HTTP 503']);
  });

  test('an attempt no hold can tell (it timed out) stops the reading at the call scheduled after the hold', async () => {
    const entry = (attempt: number, known: boolean) => ({
      attempt,
      at: '2026-12-06T07:59:00.000Z',
      http_status: known ? 503 : null,
      error: known ? 'HTTP 503' : NO_OUTCOME,
      duration_ms: known ? 5 : null,
    });
    const failure = (type: string, attempt: number, attempts: ReturnType<typeof entry>[]) => ({
      message: type,
      applicationFailureInfo: {
        type,
        details: payloads({ attempt, httpStatus: null, attempts, attempts_omitted: 0 }),
      },
    });
    // Attempts 1-2, then held; after the resume attempt 3 answered and attempt 4 timed out with the budget.
    const timedOut: Event = {
      activityTaskTimedOutEventAttributes: {
        failure: failure('RunsApiUnavailable', 4, [
          entry(1, true),
          entry(2, true),
          entry(3, true),
          entry(4, false),
        ]),
      },
    };
    const held: Event = {
      activityTaskFailedEventAttributes: {
        failure: failure('TenantPaused', 2, [entry(1, true), entry(2, true)]),
      },
    };
    const older = Array.from({ length: 40 }, () => [task, task]);
    const { read, requests } = reader([[task, timedOut], [scheduled('call-1-after-2')], [held], ...older]);
    const h = await lastCallHistory(read, 'default', 'w', 'r', 4);
    expect(h?.attempts.map((a) => a.error)).toEqual(['HTTP 503', 'HTTP 503', 'HTTP 503', NO_OUTCOME]);
    expect(requests).toHaveLength(2);
    // The first call bounds it too: no call before it, so no hold before it.
    const first = reader([[task, held], [scheduled('call-0-after-0')], ...older]);
    const unknownFirst: Event = {
      activityTaskFailedEventAttributes: {
        failure: failure('TenantPaused', 2, [entry(1, false), entry(2, true)]),
      },
    };
    const bounded = reader([[task, unknownFirst], [scheduled('call-0-after-0')], ...older]);
    await expect(lastCallHistory(first.read, 'default', 'w', 'r')).resolves.toBeDefined();
    expect(first.requests).toHaveLength(1);
    expect((await lastCallHistory(bounded.read, 'default', 'w', 'r'))?.attempts[0]?.error).toBe(NO_OUTCOME);
    expect(bounded.requests).toHaveLength(2);
  });

  test('no failure in the whole history gives none', async () => {
    const { read, requests } = reader([[task], [task], [task]]);
    await expect(lastCallHistory(read, 'default', 'w', 'r')).resolves.toBeUndefined();
    expect(requests).toHaveLength(3);
  });
});
