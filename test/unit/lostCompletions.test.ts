/**
 * The account of test/support/lostCompletions.ts: an attempt that heard the API admit the run (the worker's log)
 * explains one 409 only when the history shows the call completed once, by the next attempt, started after that
 * one timed out, in an execution that completed. Recorded histories, and small ones made here for what no
 * recording has (a call completed twice).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { loadHistoryFixtures } from '../support/histories';
import {
  type CallCompletion,
  callCompletion,
  heardAdmissions,
  lostCompletionAllowances,
  lostCompletions,
} from '../support/lostCompletions';

type History = temporal.api.history.v1.IHistory;

const histories = new Map(loadHistoryFixtures().map((h) => [h.name, h.history]));
const history = (name: string): History => {
  const h = histories.get(name);
  if (!h) throw new Error(`no recorded history ${name}`);
  return h;
};

function admitted(key: string, attempt: unknown, runId = 'run-1', tenant = 't1'): string {
  return JSON.stringify({
    level: 'info',
    tenant,
    dispatch_key: key,
    workflow_id: `dispatch:${tenant}:${key}`,
    temporal_run_id: runId,
    attempt,
    code: '201',
    msg: 'run admitted',
  });
}

/** A history of calls, each `[activityType, activityId, startedAttempt, timedOutBefore]`, completed in order. */
function calls(list: [string, string, number, boolean][], completed = true): History {
  const events: object[] = [];
  let id = 0;
  for (const [type, activityId, attempt, timedOut] of list) {
    const scheduled = ++id;
    events.push({
      eventId: scheduled,
      activityTaskScheduledEventAttributes: { activityType: { name: type }, activityId },
    });
    const started = ++id;
    const lastFailure = timedOut
      ? { timeoutFailureInfo: {} }
      : attempt > 1
        ? { applicationFailureInfo: {} }
        : null;
    events.push({ eventId: started, activityTaskStartedEventAttributes: { attempt, lastFailure } });
    events.push({
      eventId: ++id,
      activityTaskCompletedEventAttributes: { scheduledEventId: scheduled, startedEventId: started },
    });
  }
  if (completed) events.push({ eventId: id + 1, workflowExecutionCompletedEventAttributes: {} });
  return { events } as unknown as History;
}

const once = (attempt: number, afterTimeout: boolean): CallCompletion => ({
  completed: true,
  completing: [attempt],
  afterTimeout: [afterTimeout],
});

describe('lost completions', () => {
  it("reads each admission the worker heard from its log, under the double's run key", () => {
    const log = [
      admitted('k1', 2),
      '{"level":"warn","dispatch_key":"k1","attempt":1,"code":"503","msg":"runs API attempt failed; Temporal will retry"}',
      '{"level":"warn","dispatch_key":"k1","attempt":4,"reason":"\\"run admitted\\"","msg":"something else"}',
      admitted('k1', '5'),
      'not json, e.g. the SDK core writing to stderr "run admitted"',
      admitted('k1', 3, 'run-2'),
      '',
    ].join('\n');
    const wf = 'dispatch:t1:k1';
    expect(heardAdmissions(log, false)).toEqual([
      { runKey: 'k1', workflowId: wf, runId: 'run-1', attempt: 2 },
      { runKey: 'k1', workflowId: wf, runId: 'run-2', attempt: 3 },
    ]);
    expect(heardAdmissions(log, true).map((h) => h.runKey)).toEqual(['t1/k1', 't1/k1']);
  });

  it("reads the call's completions from recorded histories, counted after a hold's attempts", () => {
    expect(callCompletion(history('completed-created'))).toEqual(once(1, false));
    expect(callCompletion(history('completed-after-503-retries'))).toEqual(once(3, false));
    expect(callCompletion(history('completed-existing-after-worker-crash'))).toEqual(once(2, true));
    // call-1-after-1's attempt 1 is the execution's attempt 2.
    expect(callCompletion(history('completed-after-hold'))).toEqual(once(2, false));
    expect(callCompletion(history('completed-after-second-hold'))).toEqual(once(1, false));
    // A dead letter's activity completing is not the call's, and the execution failed.
    expect(callCompletion(history('failed-retries-exhausted'))).toEqual({
      completed: false,
      completing: [],
      afterTimeout: [],
    });
  });

  it('takes each completion with its own start, and only the call activities', () => {
    const h = calls([
      ['postRunWithInputBytes', 'call-0-after-0', 3, true],
      ['postmark', 'x', 7, false],
      ['deadLetter', '2', 1, false],
    ]);
    expect(callCompletion(h)).toEqual(once(3, true));
    expect(callCompletion(calls([['postRun', '1', 2, true]], false))).toEqual({
      completed: false,
      completing: [2],
      afterTimeout: [true],
    });
  });

  it('explains one 409 only for the attempt just before the only completion, which followed its timeout', () => {
    // Attempt 2 heard 201 and timed out at Temporal; attempt 3 heard 409 and completed the call.
    expect(lostCompletions([2, 3], once(3, true))).toBe(1);
    expect(lostCompletions([2], once(3, true))).toBe(1);
    // The attempt before failed otherwise (e.g. threw after hearing 201): unexplained.
    expect(lostCompletions([2, 3], once(3, false))).toBe(0);
    // The completing attempt itself, or one further back: unexplained.
    expect(lostCompletions([3], once(3, true))).toBe(0);
    expect(lostCompletions([1, 3], once(3, true))).toBe(0);
    // Not completed (still running, or dead-lettered after an admission): unexplained.
    expect(lostCompletions([2, 3], { ...once(3, true), completed: false })).toBe(0);
    // The call completed twice (scheduled again after it succeeded): the bug the bound is there for.
    const twice = callCompletion(
      calls([
        ['postRunWithInputBytes', 'call-0-after-0', 1, false],
        ['postRunReadingInput', 'call-1-after-1', 1, false],
      ]),
    );
    expect(twice.completing).toEqual([1, 2]);
    expect(lostCompletions([1, 2], twice)).toBe(0);
    expect(lostCompletions([1, 2], { ...twice, afterTimeout: [true, true] })).toBe(0);
  });

  it("asks each execution's own run, grants at most the key's excess, and says what it could not read", () => {
    const asked: string[] = [];
    const byRun: Record<string, History> = {
      'run-1': calls([['postRunWithInputBytes', 'call-0-after-0', 3, true]]),
      'run-2': calls([['postRunWithInputBytes', 'call-0-after-0', 2, true]]),
    };
    const client = {
      workflow: {
        getHandle: (workflowId: string, runId: string) => ({
          result: async () => undefined,
          fetchHistory: async () => {
            asked.push(`${workflowId}/${runId}`);
            const h = byRun[runId];
            if (!h) throw new Error('workflow not found');
            return h;
          },
        }),
      },
    } as unknown as Client;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lost-'));
    const log = path.join(dir, 'worker.log');
    fs.writeFileSync(
      log,
      [
        admitted('k1', 2, 'run-1'),
        admitted('k1', 3, 'run-1'),
        admitted('k1', 1, 'run-2'),
        admitted('k2', 1, 'run-9'),
        admitted('other', 2, 'run-1'),
      ].join('\n'),
    );
    return (async () => {
      const one = await lostCompletionAllowances(
        client,
        [log, path.join(dir, 'gone.log')],
        new Map([['k1', 1]]),
        false,
      );
      expect(one.allowances.map((a) => [a.runKey, a.conflicts])).toEqual([['k1', 1]]);
      expect(asked.sort()).toEqual(['dispatch:t1:k1/run-1', 'dispatch:t1:k1/run-2']);
      const two = await lostCompletionAllowances(
        client,
        [log],
        new Map([
          ['k1', 5],
          ['k2', 1],
        ]),
        false,
      );
      expect(two.allowances.map((a) => [a.runKey, a.conflicts])).toEqual([
        ['k1', 1],
        ['k1', 1],
      ]);
      expect(two.notes).toEqual([
        expect.stringMatching(/^k2: history of dispatch:t1:k2 not read \(workflow not found\)/),
      ]);
    })();
  });
});
