/**
 * The bench's per-dispatch PostgreSQL arithmetic (tools/bench/pgCost.ts) over psql's output, and the helpers of
 * tools/bench/temporalCost.ts that read the server's metrics and pick the histories to count.
 */
import { type PgCounters, parseDbCounters, pgCostPerDispatch, pgRate } from '../../tools/bench/pgCost';
import { actionsPerDispatch, counterBy, sampleEvenly } from '../../tools/bench/temporalCost';

const reading = (xact: number, executions: [number, number, number]): PgCounters => ({
  temporal: parseDbCounters(
    `${xact}|3`,
    `executions|${executions.join('|')}\nhistory_node|${executions[0] * 6}|0|0\nnamespaces|1|0|0`,
  ),
});

describe('PostgreSQL per dispatch', () => {
  test('psql rows parse into counters; a line that is not one is refused', () => {
    expect(parseDbCounters('120|2', 'executions|5|30|0\n')).toEqual({
      xact_commit: 120,
      xact_rollback: 2,
      tables: { executions: { ins: 5, upd: 30, del: 0 } },
    });
    expect(() => parseDbCounters('', '')).toThrow('not a pg_stat_database row');
  });

  test('differences over dispatches; unchanged tables left out', () => {
    const cost = pgCostPerDispatch(reading(1000, [10, 60, 0]), reading(1930, [20, 121, 10]), 10);
    expect(cost.temporal).toEqual({
      xact_commit: 93,
      rows_inserted: 7,
      rows_updated: 6.1,
      rows_deleted: 1,
      tables: { executions: { ins: 1, upd: 6.1, del: 1 }, history_node: { ins: 6, upd: 0, del: 0 } },
    });
  });

  test('an idle rate times the window is taken out', () => {
    const idle = pgRate(reading(0, [0, 0, 0]), reading(20, [0, 2, 0]), 2);
    expect(idle.temporal!.xact_commit).toBe(10);
    const cost = pgCostPerDispatch(reading(1000, [10, 60, 0]), reading(1930, [20, 121, 10]), 10, {
      perS: idle,
      windowS: 3,
    });
    expect(cost.temporal!.xact_commit).toBe(90);
    expect(cost.temporal!.tables.executions).toEqual({ ins: 1, upd: 5.8, del: 1 });
  });

  test('a database missing from the reading before is an error', () => {
    expect(() => pgCostPerDispatch({}, reading(1, [0, 0, 0]), 1)).toThrow('no reading of database temporal');
  });
});

describe('temporalCost helpers', () => {
  test("the server's action counter by type for one namespace, and its change per dispatch", () => {
    const text = (starts: number, schedules: number) =>
      [
        `action{action_type="grpc_StartWorkflowExecution",namespace="default",operation="StartWorkflowExecution",service_name="frontend"} ${starts}`,
        `action{action_type="command_ScheduleActivityTask",namespace="default",operation="RespondWorkflowTaskCompleted",service_name="frontend"} ${schedules}`,
        'action{action_type="grpc_StartWorkflowExecution",namespace="temporal_system",operation="StartWorkflowExecution",service_name="frontend"} 9',
        'action{action_type="grpc_SignalWorkflowExecution",namespace="default",operation="SignalWorkflowExecution",service_name="frontend"} 4',
      ].join('\n');
    const before = counterBy(text(10, 10), 'action', 'namespace="default"', 'action_type');
    expect(before).toEqual({
      grpc_StartWorkflowExecution: 10,
      command_ScheduleActivityTask: 10,
      grpc_SignalWorkflowExecution: 4,
    });
    const after = counterBy(text(30, 50), 'action', 'namespace="default"', 'action_type');
    expect(actionsPerDispatch(before, after, 20)).toEqual({
      command_ScheduleActivityTask: 2,
      grpc_StartWorkflowExecution: 1,
    });
  });

  test('an even sample keeps order, spans the list, and takes all of a short one', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i);
    expect(sampleEvenly(xs, 4)).toEqual([0, 25, 50, 75]);
    expect(sampleEvenly([1, 2], 50)).toEqual([1, 2]);
  });
});
