/**
 * The one cause of a second POST that the runs API double cannot see: an attempt heard its answer, but Temporal
 * never took that attempt's completion (the server timed the attempt out first, e.g. its heartbeats or its
 * completion arrived late while the server was starved), so it ran the call again, and the API answered 409. The
 * evidence comes from both sides: the worker's own log says which attempt heard the API admit the run, and the
 * execution's history says which attempt Temporal completed the call with. Each attempt that heard an admission and
 * is not the completing one explains one 409 (test/support/conflicts.ts asks for that account).
 */
import fs from 'node:fs';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { holdableCall } from '../../src/contract/workflow';
import type { ConflictAllowance } from './conflicts';

/** A worker's log line saying an attempt heard the API admit the run (created or existing). */
export interface HeardAdmission {
  /** The run key the double counts it under (see RunsApiOptions.tenantScoped). */
  runKey: string;
  workflowId: string;
  runId: string;
  /** The attempt as the execution counts it (after a hold's earlier attempts). */
  attempt: number;
}

/** Every admission the relay's log lines report (src/activities/runsApiCall.ts, "run admitted"). */
export function heardAdmissions(logText: string, tenantScoped: boolean): HeardAdmission[] {
  const heard: HeardAdmission[] = [];
  for (const line of logText.split('\n')) {
    if (!line.includes('"run admitted"')) continue;
    let fields: Record<string, unknown>;
    try {
      fields = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue;
    }
    const { tenant, dispatch_key: key, workflow_id: workflowId, temporal_run_id: runId, attempt } = fields;
    if (typeof key !== 'string' || typeof workflowId !== 'string' || typeof runId !== 'string') continue;
    if (typeof attempt !== 'number') continue;
    heard.push({ runKey: tenantScoped ? `${String(tenant)}/${key}` : key, workflowId, runId, attempt });
  }
  return heard;
}

/** The attempt (as the execution counts it) whose completion of the runs API call the history records, if any. */
export function completingAttempt(history: temporal.api.history.v1.IHistory): number | undefined {
  const calls = new Map<string, string>();
  const started = new Map<string, number>();
  let completing: number | undefined;
  for (const e of history.events ?? []) {
    const id = String(e.eventId);
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name?.startsWith('postRun')) calls.set(id, scheduled.activityId ?? '');
    const start = e.activityTaskStartedEventAttributes;
    if (start) started.set(id, start.attempt ?? 1);
    const done = e.activityTaskCompletedEventAttributes;
    const activityId = done ? calls.get(String(done.scheduledEventId)) : undefined;
    if (done && activityId !== undefined) {
      completing =
        (started.get(String(done.startedEventId)) ?? 1) + (holdableCall(activityId)?.attemptsBefore ?? 0);
    }
  }
  return completing;
}

/** Attempts that heard an admission and are not the one Temporal completed the call with. */
export function lostCompletions(heard: readonly number[], completing: number | undefined): number {
  const distinct = new Set(heard);
  return distinct.size - (completing !== undefined && distinct.has(completing) ? 1 : 0);
}

/**
 * One allowance per run key in `runKeys` for each attempt whose heard admission Temporal did not take, read from
 * the relay processes' logs and the executions' histories.
 */
export async function lostCompletionAllowances(
  client: Client,
  logFiles: readonly string[],
  runKeys: readonly string[],
  tenantScoped: boolean,
): Promise<ConflictAllowance[]> {
  const wanted = new Set(runKeys);
  const heard = logFiles
    .flatMap((f) => (fs.existsSync(f) ? heardAdmissions(fs.readFileSync(f, 'utf8'), tenantScoped) : []))
    .filter((h) => wanted.has(h.runKey));
  const allowances: ConflictAllowance[] = [];
  for (const runKey of wanted) {
    const byExecution = new Map<string, { workflowId: string; runId: string; attempts: number[] }>();
    for (const h of heard.filter((x) => x.runKey === runKey)) {
      const at = `${h.workflowId}/${h.runId}`;
      const e = byExecution.get(at) ?? { workflowId: h.workflowId, runId: h.runId, attempts: [] };
      e.attempts.push(h.attempt);
      byExecution.set(at, e);
    }
    for (const { workflowId, runId, attempts } of byExecution.values()) {
      const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
      const completing = completingAttempt(history);
      const lost = lostCompletions(attempts, completing);
      if (lost === 0) continue;
      allowances.push({
        runKey,
        conflicts: lost,
        why:
          `attempts ${[...new Set(attempts)].join(', ')} heard the API admit the run; Temporal completed the ` +
          `call with attempt ${completing ?? 'none'}`,
      });
    }
  }
  return allowances;
}
