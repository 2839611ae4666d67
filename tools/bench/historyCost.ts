/**
 * What one execution cost Temporal, counted from its history: events by type, and Temporal Cloud's billable
 * actions by the published rules (https://docs.temporal.io/cloud/actions, written out in docs/performance.md,
 * "Cost of a dispatch"). Pure functions over the history's proto JSON, the form `temporal workflow show -o json`
 * writes and historyToJSON returns, so recorded histories and fetched ones are counted alike. What a history does
 * not show is not counted here: activity heartbeats that reach the server and queries are billed too (the bench
 * reads the server's own action counter beside the histories, temporalCost.ts).
 */

interface JsonEvent {
  eventType?: string;
  workflowTaskCompletedEventAttributes?: {
    meteringMetadata?: { nonfirstLocalActivityExecutionAttempts?: number };
  };
  workflowTaskFailedEventAttributes?: { cause?: string };
  markerRecordedEventAttributes?: { workflowTaskCompletedEventId?: string | number };
  upsertWorkflowSearchAttributesEventAttributes?: {
    searchAttributes?: { indexedFields?: Record<string, unknown> };
  };
  activityTaskStartedEventAttributes?: { attempt?: number };
}

export interface HistoryCost {
  events: number;
  /** Event counts by type, without the EVENT_TYPE_ prefix. */
  events_by_type: Record<string, number>;
  actions: number;
  /** Actions by the usage names of Temporal's page (start_workflow, schedule_activity, retry_activity, …). */
  actions_by_type: Record<string, number>;
  /** Activity attempts after the first (the attempt number of each ActivityTaskStarted, minus one). */
  activity_retries: number;
}

const PREFIX = 'EVENT_TYPE_';
/** Exempt from the upsert action (the SDK's versioning attribute, written beside a patch marker). */
const VERSIONING_ATTRIBUTE = 'TemporalChangeVersion';
const RESET_CAUSE = 'WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW';

/** Actions a single event is billed by itself; markers, upserts, attempts and resets are counted apart. */
const ACTION_OF_EVENT: Record<string, [string, number]> = {
  WORKFLOW_EXECUTION_STARTED: ['start_workflow', 1],
  ACTIVITY_TASK_SCHEDULED: ['schedule_activity', 1],
  TIMER_STARTED: ['start_timer', 1],
  WORKFLOW_EXECUTION_SIGNALED: ['signal_workflow', 1],
  // The intent and the attempt to start the child: two actions.
  START_CHILD_WORKFLOW_EXECUTION_INITIATED: ['start_child_workflow', 2],
  WORKFLOW_EXECUTION_UPDATE_ACCEPTED: ['accept_workflow_update', 1],
  WORKFLOW_EXECUTION_OPTIONS_UPDATED: ['update_workflow_options', 1],
  NEXUS_OPERATION_SCHEDULED: ['schedule_nexus_operation', 1],
  NEXUS_OPERATION_CANCEL_REQUESTED: ['request_nexus_operation_cancellation', 1],
};

function eventsOf(history: unknown): JsonEvent[] {
  const events = (history as { events?: unknown } | null)?.events;
  if (!Array.isArray(events) || events.length === 0) throw new Error('not a history: no events');
  return events as JsonEvent[];
}

const typeOf = (e: JsonEvent) => {
  if (typeof e.eventType !== 'string') throw new Error('history event without an eventType');
  return e.eventType.startsWith(PREFIX) ? e.eventType.slice(PREFIX.length) : e.eventType;
};

/**
 * The events and billable actions of one run's history. A run created by a reset begins with copies of the
 * original's events up to the reset point (the workflow task failed with cause RESET_WORKFLOW); those were billed
 * on the original run, so only the reset itself and what follows it count here.
 */
export function historyCost(history: unknown): HistoryCost {
  const events = eventsOf(history);
  const eventsByType: Record<string, number> = {};
  for (const e of events) {
    const type = typeOf(e);
    eventsByType[type] = (eventsByType[type] ?? 0) + 1;
  }
  let resetAt = -1;
  events.forEach((e, i) => {
    if (typeOf(e) === 'WORKFLOW_TASK_FAILED' && e.workflowTaskFailedEventAttributes?.cause === RESET_CAUSE)
      resetAt = i;
  });
  const actions: Record<string, number> = {};
  const add = (name: string, n: number) => {
    if (n > 0) actions[name] = (actions[name] ?? 0) + n;
  };
  if (resetAt >= 0) add('reset_workflow', 1);
  const markerTasks = new Set<string>();
  let retries = 0;
  for (const e of events.slice(resetAt + 1)) {
    const type = typeOf(e);
    const fixed = ACTION_OF_EVENT[type];
    if (fixed) add(fixed[0], fixed[1]);
    if (type === 'ACTIVITY_TASK_STARTED') {
      const attempt = e.activityTaskStartedEventAttributes?.attempt ?? 1;
      retries += attempt - 1;
      add('retry_activity', attempt - 1);
    } else if (type === 'WORKFLOW_TASK_COMPLETED') {
      const meter = e.workflowTaskCompletedEventAttributes?.meteringMetadata;
      add('retry_activity_local', meter?.nonfirstLocalActivityExecutionAttempts ?? 0);
    } else if (type === 'MARKER_RECORDED') {
      // All markers one workflow task records are one action, however many there are.
      markerTasks.add(String(e.markerRecordedEventAttributes?.workflowTaskCompletedEventId ?? '?'));
    } else if (type === 'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES') {
      const fields = Object.keys(
        e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {},
      );
      if (fields.some((f) => f !== VERSIONING_ATTRIBUTE)) add('upsert_workflow_search_attributes', 1);
    }
  }
  add('record_activity_markers', markerTasks.size);
  return {
    events: events.length,
    events_by_type: eventsByType,
    actions: Object.values(actions).reduce((a, b) => a + b, 0),
    actions_by_type: actions,
    activity_retries: retries,
  };
}

export interface CostSummary {
  executions: number;
  events_per_dispatch: number;
  actions_per_dispatch: number;
  /** Mean count per execution of each event type and each action type. */
  events_by_type: Record<string, number>;
  actions_by_type: Record<string, number>;
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

function meanOf(maps: Record<string, number>[]): Record<string, number> {
  const sum: Record<string, number> = {};
  for (const m of maps) for (const [k, v] of Object.entries(m)) sum[k] = (sum[k] ?? 0) + v;
  return Object.fromEntries(
    Object.entries(sum)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => [k, round3(v / maps.length)]),
  );
}

/** Means over a sample of executions. */
export function summarize(costs: HistoryCost[]): CostSummary {
  if (costs.length === 0) throw new Error('no histories to summarize');
  return {
    executions: costs.length,
    events_per_dispatch: round3(costs.reduce((a, c) => a + c.events, 0) / costs.length),
    actions_per_dispatch: round3(costs.reduce((a, c) => a + c.actions, 0) / costs.length),
    events_by_type: meanOf(costs.map((c) => c.events_by_type)),
    actions_by_type: meanOf(costs.map((c) => c.actions_by_type)),
  };
}

export interface RetryCost {
  /** Executions left out because a workflow task of theirs timed out or failed (a cost of load, not of retries). */
  workflow_task_retried: number;
  /** Executions without a retried attempt (the happy path) and with at least one. */
  happy: number;
  retried: number;
  /** Retried attempts over the retried executions. */
  retried_attempts: number;
  /** What each retried attempt added against the happy path's mean; null without both kinds in the sample. */
  events_per_retried_attempt: number | null;
  actions_per_retried_attempt: number | null;
}

const WORKFLOW_TASK_RETRIES = ['WORKFLOW_TASK_TIMED_OUT', 'WORKFLOW_TASK_FAILED'];

/**
 * The extra cost of a retried attempt: over the executions that retried, their events (actions) minus the happy
 * path's mean, divided by their retried attempts. Executions with a workflow task that timed out or failed are
 * left out on both sides (a loaded worker's sticky task timing out adds three events whether or not an attempt
 * was retried, and would blur the difference); the caller reports them apart.
 */
export function retryCost(costs: HistoryCost[]): RetryCost {
  const clean = costs.filter((c) => !WORKFLOW_TASK_RETRIES.some((t) => (c.events_by_type[t] ?? 0) > 0));
  const happy = clean.filter((c) => c.activity_retries === 0);
  const retried = clean.filter((c) => c.activity_retries > 0);
  const attempts = retried.reduce((a, c) => a + c.activity_retries, 0);
  const extra = (pick: (c: HistoryCost) => number) => {
    if (happy.length === 0 || retried.length === 0) return null;
    const base = happy.reduce((a, c) => a + pick(c), 0) / happy.length;
    return round3(retried.reduce((a, c) => a + pick(c) - base, 0) / attempts);
  };
  return {
    workflow_task_retried: costs.length - clean.length,
    happy: happy.length,
    retried: retried.length,
    retried_attempts: attempts,
    events_per_retried_attempt: extra((c) => c.events),
    actions_per_retried_attempt: extra((c) => c.actions),
  };
}
