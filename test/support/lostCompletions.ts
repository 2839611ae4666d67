/**
 * The one cause of a second POST that the runs API double cannot see: an attempt heard the API admit the run, but
 * Temporal timed that attempt out before its completion arrived (its heartbeats or its completion late, e.g. on a
 * starved server), ran the call again, and the API answered 409. Both sides must say so: the worker's own log
 * names the attempt that heard the admission, and the execution's history shows the call completed once, by the
 * next attempt, whose start records that the one before it timed out. Nothing else explains a 409: not an
 * execution still running or failed, not a call completed twice, not an attempt that failed any other way
 * (test/support/conflicts.ts asks for this account only for keys over their bound).
 */
import fs from 'node:fs';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { holdableCall } from '../../src/contract/workflow';
import type { RunsApiDouble } from '../../devstack/runsApiDouble';
import { type ConflictAllowance, conflictsOverBound, expectConflictsBounded } from './conflicts';

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
    const {
      msg,
      tenant,
      dispatch_key: key,
      workflow_id: workflowId,
      temporal_run_id: runId,
      attempt,
    } = fields;
    if (msg !== 'run admitted' || typeof key !== 'string' || typeof attempt !== 'number') continue;
    if (typeof workflowId !== 'string' || typeof runId !== 'string') continue;
    heard.push({ runKey: tenantScoped ? `${String(tenant)}/${key}` : key, workflowId, runId, attempt });
  }
  return heard;
}

/** What an execution's history says of its runs API call's completion. */
export interface CallCompletion {
  /** The execution ended completed. */
  completed: boolean;
  /** Each completion of a `postRun*` activity: the attempt as the execution counts it. */
  completing: number[];
  /** Per completing attempt: the attempt before it ended by a timeout (its start's last failure). */
  afterTimeout: boolean[];
}

/** The call's completions in `history`, and whether the attempt before each one timed out. */
export function callCompletion(history: temporal.api.history.v1.IHistory): CallCompletion {
  const calls = new Map<string, string>();
  const started = new Map<string, temporal.api.history.v1.IActivityTaskStartedEventAttributes>();
  const out: CallCompletion = { completed: false, completing: [], afterTimeout: [] };
  for (const e of history.events ?? []) {
    const id = String(e.eventId);
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name?.startsWith('postRun')) calls.set(id, scheduled.activityId ?? '');
    if (e.activityTaskStartedEventAttributes) started.set(id, e.activityTaskStartedEventAttributes);
    if (e.workflowExecutionCompletedEventAttributes) out.completed = true;
    const done = e.activityTaskCompletedEventAttributes;
    const activityId = done ? calls.get(String(done.scheduledEventId)) : undefined;
    if (!done || activityId === undefined) continue;
    const start = started.get(String(done.startedEventId));
    out.completing.push((start?.attempt ?? 1) + (holdableCall(activityId)?.attemptsBefore ?? 0));
    out.afterTimeout.push(Boolean(start?.lastFailure?.timeoutFailureInfo));
  }
  return out;
}

/**
 * 1 when an attempt that heard an admission is the one just before the call's only completion, the execution
 * completed, and the completing attempt started after that one timed out; else 0.
 */
export function lostCompletions(heard: readonly number[], c: CallCompletion): number {
  if (!c.completed || c.completing.length !== 1 || !c.afterTimeout[0]) return 0;
  return heard.includes(c.completing[0]! - 1) ? 1 : 0;
}

/** How long an execution still running at the check may take to close before it counts as unexplained. */
const CLOSE_WAIT_MS = 15_000;

/**
 * For each run key in `excess` (the 409s past its bound), the 409s lost completions explain, at most its excess,
 * read from the relay processes' logs and the executions' histories. An execution whose history cannot be read
 * explains nothing, and says why.
 */
export async function lostCompletionAllowances(
  client: Client,
  logFiles: readonly string[],
  excess: ReadonlyMap<string, number>,
  tenantScoped: boolean,
): Promise<{ allowances: ConflictAllowance[]; notes: string[] }> {
  const heard = logFiles
    .flatMap((f) => (fs.existsSync(f) ? heardAdmissions(fs.readFileSync(f, 'utf8'), tenantScoped) : []))
    .filter((h) => excess.has(h.runKey));
  const allowances: ConflictAllowance[] = [];
  const notes: string[] = [];
  for (const [runKey, over] of excess) {
    const executions = new Map<string, { workflowId: string; runId: string; attempts: number[] }>();
    for (const h of heard.filter((x) => x.runKey === runKey)) {
      const at = `${h.workflowId}/${h.runId}`;
      const e = executions.get(at) ?? { workflowId: h.workflowId, runId: h.runId, attempts: [] };
      e.attempts.push(h.attempt);
      executions.set(at, e);
    }
    let granted = 0;
    for (const { workflowId, runId, attempts } of executions.values()) {
      try {
        const handle = client.workflow.getHandle(workflowId, runId);
        await Promise.race([handle.result(), new Promise((r) => setTimeout(r, CLOSE_WAIT_MS).unref())]).catch(
          () => undefined,
        );
        const c = callCompletion(await handle.fetchHistory());
        const lost = Math.min(lostCompletions(attempts, c), over - granted);
        if (lost === 0) continue;
        granted += lost;
        allowances.push({
          runKey,
          conflicts: lost,
          why:
            `attempt ${c.completing[0]! - 1} heard the API admit the run and timed out at Temporal; ` +
            `attempt ${c.completing[0]} completed the call`,
        });
      } catch (err) {
        notes.push(`${runKey}: history of ${workflowId} not read (${(err as Error).message})`);
      }
    }
  }
  return { allowances, notes };
}

/** Where the account of lost completions reads: Temporal, the relay processes' logs, the double's run keys. */
export interface CompletionSources {
  client: Client;
  logFiles: readonly string[];
  tenantScoped: boolean;
}

/**
 * expectConflictsBounded, with the 409s lost completions explain granted first, each printed with its reason; a
 * failure names what was explained and what could not be read besides what stays over.
 */
export async function expectConflictsExplained(
  api: RunsApiDouble,
  allowed: readonly ConflictAllowance[],
  sources: CompletionSources,
): Promise<void> {
  const over = conflictsOverBound(api, allowed);
  if (over.length === 0) return;
  const excess = new Map(over.map((o) => [o.runKey, o.counts.conflicts - o.bound]));
  const { allowances, notes } = await lostCompletionAllowances(
    sources.client,
    sources.logFiles,
    excess,
    sources.tenantScoped,
  );
  const said = [...allowances.map((a) => `${a.runKey}: ${a.why}`), ...notes].join('; ');
  try {
    expectConflictsBounded(api, [...allowed, ...allowances]);
  } catch (err) {
    throw new Error(`${(err as Error).message}${said ? ` (lost completions: ${said})` : ''}`, {
      cause: err,
    });
  }
  process.stderr.write(`[conflicts] explained by lost completions: ${said}\n`);
}
