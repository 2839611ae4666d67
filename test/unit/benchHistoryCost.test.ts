/**
 * The bench's counting of a dispatch's Temporal cost (tools/bench/historyCost.ts) on the recorded `dispatch`
 * histories of the replay test (test/fixtures/histories), and on small hand-made histories for the rules the
 * dispatch workflow does not exercise.
 */
import fs from 'node:fs';
import path from 'node:path';
import { historyCost, retryCost, summarize } from '../../tools/bench/historyCost';
import { HISTORIES_DIR } from '../support/histories';

const fixture = (name: string): unknown =>
  JSON.parse(fs.readFileSync(path.join(HISTORIES_DIR, `${name}.json`), 'utf8'));

const ev = (eventType: string, attrs: Record<string, unknown> = {}) => ({
  eventType: `EVENT_TYPE_${eventType}`,
  ...attrs,
});
const taskCompleted = (nonfirst?: number) =>
  ev('WORKFLOW_TASK_COMPLETED', {
    workflowTaskCompletedEventAttributes: {
      meteringMetadata: nonfirst ? { nonfirstLocalActivityExecutionAttempts: nonfirst } : {},
    },
  });
const marker = (task: string) =>
  ev('MARKER_RECORDED', {
    markerRecordedEventAttributes: { markerName: 'core_local_activity', workflowTaskCompletedEventId: task },
  });
const upsert = (...names: string[]) =>
  ev('UPSERT_WORKFLOW_SEARCH_ATTRIBUTES', {
    upsertWorkflowSearchAttributesEventAttributes: {
      searchAttributes: { indexedFields: Object.fromEntries(names.map((n) => [n, {}])) },
    },
  });

describe('a recorded dispatch history', () => {
  test('the happy path: 13 events, 3 actions (start, the patch marker task, the activity)', () => {
    const cost = historyCost(fixture('completed-created'));
    expect(cost.events).toBe(13);
    expect(cost.events_by_type).toMatchObject({
      WORKFLOW_EXECUTION_STARTED: 1,
      WORKFLOW_TASK_COMPLETED: 2,
      ACTIVITY_TASK_STARTED: 1,
      UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: 1,
    });
    // The upsert carries only TemporalChangeVersion (written by patched()), which is exempt.
    expect(cost.actions_by_type).toEqual({
      start_workflow: 1,
      record_activity_markers: 1,
      schedule_activity: 1,
    });
    expect(cost.actions).toBe(3);
    expect(cost.activity_retries).toBe(0);
  });

  test('two retried attempts add two actions and no event (the attempt number is on ActivityTaskStarted)', () => {
    const cost = historyCost(fixture('completed-after-503-retries'));
    expect(cost.events).toBe(13);
    expect(cost.actions_by_type.retry_activity).toBe(2);
    expect(cost.actions).toBe(5);
    expect(cost.activity_retries).toBe(2);
  });

  test('a reset run: the copied start is billed on the original run; the reset is one action', () => {
    const cost = historyCost(fixture('completed-after-reset'));
    expect(cost.events).toBe(16);
    expect(cost.actions_by_type).toEqual({
      reset_workflow: 1,
      record_activity_markers: 1,
      schedule_activity: 1,
    });
  });

  test('a spent budget: three retries, the waiting timer, two calls and a marker task each', () => {
    const cost = historyCost(fixture('failed-budget-spent'));
    expect(cost.events).toBe(28);
    expect(cost.actions_by_type).toEqual({
      start_workflow: 1,
      record_activity_markers: 3,
      schedule_activity: 2,
      retry_activity: 3,
      start_timer: 1,
    });
    expect(cost.actions).toBe(10);
  });

  test('every recorded history counts without error, and events add up to the history length', () => {
    const files = fs.readdirSync(HISTORIES_DIR).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThan(5);
    for (const f of files) {
      const json = fixture(f.replace(/\.json$/, '')) as { events: unknown[] };
      const cost = historyCost(json);
      expect(Object.values(cost.events_by_type).reduce((a, b) => a + b, 0)).toBe(json.events.length);
      expect(cost.actions).toBeGreaterThanOrEqual(3);
    }
  });
});

describe('the rules the dispatch does not exercise', () => {
  test('markers of one workflow task are one action; local activity retries are read from the metering', () => {
    const cost = historyCost({
      events: [
        ev('WORKFLOW_EXECUTION_STARTED'),
        taskCompleted(2),
        marker('2'),
        marker('2'),
        marker('2'),
        taskCompleted(),
        marker('6'),
      ],
    });
    expect(cost.actions_by_type).toEqual({
      start_workflow: 1,
      retry_activity_local: 2,
      record_activity_markers: 2,
    });
  });

  test('an upsert of any attribute besides TemporalChangeVersion is one action, however many it sets', () => {
    const cost = historyCost({
      events: [
        ev('WORKFLOW_EXECUTION_STARTED'),
        upsert('TemporalChangeVersion'),
        upsert('Tenant', 'TemporalChangeVersion', 'Goal'),
        ev('WORKFLOW_EXECUTION_SIGNALED'),
        ev('START_CHILD_WORKFLOW_EXECUTION_INITIATED'),
      ],
    });
    expect(cost.actions_by_type).toEqual({
      start_workflow: 1,
      upsert_workflow_search_attributes: 1,
      signal_workflow: 1,
      start_child_workflow: 2,
    });
  });

  test('something that is not a history is refused with one clear error', () => {
    expect(() => historyCost({})).toThrow('not a history: no events');
    expect(() => historyCost({ events: [{}] })).toThrow('history event without an eventType');
  });
});

describe('over a sample', () => {
  test('means per dispatch, and the extra cost of a retried attempt against the happy path', () => {
    const happy = historyCost(fixture('completed-created'));
    const retried = historyCost(fixture('completed-after-503-retries'));
    const s = summarize([happy, happy, retried]);
    expect(s.executions).toBe(3);
    expect(s.events_per_dispatch).toBe(13);
    expect(s.actions_per_dispatch).toBeCloseTo(11 / 3, 3);
    expect(s.actions_by_type.retry_activity).toBeCloseTo(2 / 3, 3);
    expect(retryCost([happy, happy, retried])).toEqual({
      workflow_task_retried: 0,
      happy: 2,
      retried: 1,
      retried_attempts: 2,
      events_per_retried_attempt: 0,
      actions_per_retried_attempt: 1,
    });
    expect(retryCost([happy]).actions_per_retried_attempt).toBeNull();
    // A happy history with a timed-out workflow task (3 more events) is left out, not taken as the baseline.
    const timedOut = {
      ...happy,
      events: 16,
      events_by_type: { ...happy.events_by_type, WORKFLOW_TASK_TIMED_OUT: 1 },
    };
    expect(retryCost([happy, timedOut, retried])).toMatchObject({
      workflow_task_retried: 1,
      happy: 1,
      events_per_retried_attempt: 0,
    });
    expect(() => summarize([])).toThrow('no histories');
  });
});
