/**
 * The account of test/support/lostCompletions.ts: which attempt heard the API admit the run (the worker's log) and
 * which one Temporal completed the call with (recorded histories): only an attempt in the first and not the second
 * explains a 409.
 */
import { loadHistoryFixtures } from '../support/histories';
import { completingAttempt, heardAdmissions, lostCompletions } from '../support/lostCompletions';

const histories = new Map(loadHistoryFixtures().map((h) => [h.name, h.history]));
const history = (name: string) => {
  const h = histories.get(name);
  if (!h) throw new Error(`no recorded history ${name}`);
  return h;
};

function admitted(key: string, attempt: number, code: '201' | '409', tenant = 't1'): string {
  return JSON.stringify({
    level: 'info',
    component: 'activities',
    tenant,
    dispatch_key: key,
    workflow_id: `dispatch:${tenant}:${key}`,
    temporal_run_id: 'run-1',
    attempt,
    code,
    msg: 'run admitted',
  });
}

describe('lost completions', () => {
  it("reads each admission the worker heard from its log, under the double's run key", () => {
    const log = [
      admitted('k1', 2, '201'),
      '{"level":"warn","dispatch_key":"k1","attempt":1,"code":"503","msg":"runs API attempt failed; Temporal will retry"}',
      'not json, e.g. the SDK core writing to stderr "run admitted"',
      admitted('k1', 3, '409'),
      '',
    ].join('\n');
    const one = { workflowId: 'dispatch:t1:k1', runId: 'run-1' };
    expect(heardAdmissions(log, false)).toEqual([
      { runKey: 'k1', ...one, attempt: 2 },
      { runKey: 'k1', ...one, attempt: 3 },
    ]);
    expect(heardAdmissions(log, true).map((h) => h.runKey)).toEqual(['t1/k1', 't1/k1']);
  });

  it('names the attempt Temporal completed the call with, counted after the attempts of a hold', () => {
    expect(completingAttempt(history('completed-created'))).toBe(1);
    expect(completingAttempt(history('completed-after-503-retries'))).toBe(3);
    // call-1-after-1's attempt 1 is the execution's attempt 2.
    expect(completingAttempt(history('completed-after-hold'))).toBe(2);
    expect(completingAttempt(history('completed-after-second-hold'))).toBe(1);
    // A dead letter's activity completing is not the call's.
    expect(completingAttempt(history('failed-retries-exhausted'))).toBeUndefined();
  });

  it('counts the attempts that heard an admission other than the completing one', () => {
    // Attempt 2 heard 201, Temporal took attempt 3 (which heard 409): one 409 explained.
    expect(lostCompletions([2, 3], 3)).toBe(1);
    // Heard and completed by the same attempt: a second POST stays unexplained.
    expect(lostCompletions([2], 2)).toBe(0);
    expect(lostCompletions([1, 1], 1)).toBe(0);
    // No call completed (the execution failed): every heard admission was lost.
    expect(lostCompletions([1, 2], undefined)).toBe(2);
  });
});
