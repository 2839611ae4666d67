/**
 * The visibility query for closed runs among given workflow ids, one page of it, and how long a call may take: what
 * the lone watch (./visibilityCloses.ts) asks. The closed statuses are named, so Paused and any status added later
 * count as open.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/** Closed executions among those asked about: one page. */
export interface ClosedPage {
  executions: { workflowId: string; runId: string }[];
  nextPageToken?: Uint8Array;
}

/** Workflow ids per query: 256 of the longest the contract allows make ~85 KB of query. */
export const IDS_PER_QUERY = 256;
/** Every visibility call's deadline at the server (the SDK's retries may outlast it: LOCAL_LIMIT_MS). */
export const SERVER_DEADLINE_MS = 2000;
/** Longest a call may take by the local clock, the SDK's retries after its deadline included: then it failed. */
const LOCAL_LIMIT_MS = 5000;

const S = temporal.api.enums.v1.WorkflowExecutionStatus;
/** The terminal statuses, by their names in a visibility query. Any other (Running, Paused, new ones) is open. */
const CLOSED = new Map<number, string>([
  [S.WORKFLOW_EXECUTION_STATUS_COMPLETED, 'Completed'],
  [S.WORKFLOW_EXECUTION_STATUS_FAILED, 'Failed'],
  [S.WORKFLOW_EXECUTION_STATUS_CANCELED, 'Canceled'],
  [S.WORKFLOW_EXECUTION_STATUS_TERMINATED, 'Terminated'],
  [S.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW, 'ContinuedAsNew'],
  [S.WORKFLOW_EXECUTION_STATUS_TIMED_OUT, 'TimedOut'],
]);
const CLOSED_QUERY = `ExecutionStatus IN (${[...CLOSED.values()].map((s) => `'${s}'`).join(', ')})`;

/** The query for these workflow ids' closed runs. */
export function closedQuery(ids: string[]): string {
  return `WorkflowId IN (${ids.map((id) => `'${id}'`).join(', ')}) AND ${CLOSED_QUERY}`;
}

/**
 * The call's answer, or a failure once it has taken LOCAL_LIMIT_MS: the SDK's retries sleep past its deadline, and a
 * call without an answer would hold every pending watch (and its admission slot) with it.
 */
export function answered<T>(call: Promise<T>, limitMs = LOCAL_LIMIT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`visibility did not answer within ${limitMs} ms`)),
      limitMs,
    ).unref();
  });
  return Promise.race([call, limit]).finally(() => clearTimeout(timer));
}

/** One page of ListWorkflowExecutions through the client's connection: only the runs in a closed status. */
export async function listClosed(
  client: Client,
  query: string,
  nextPageToken?: Uint8Array,
): Promise<ClosedPage> {
  const res = await client.connection.withDeadline(Date.now() + SERVER_DEADLINE_MS, () =>
    client.workflowService.listWorkflowExecutions({
      namespace: client.options.namespace,
      query,
      pageSize: IDS_PER_QUERY,
      ...(nextPageToken ? { nextPageToken } : {}),
    }),
  );
  return {
    executions: (res.executions ?? [])
      .filter((e) => e.status !== null && e.status !== undefined && CLOSED.has(e.status))
      .map((e) => ({ workflowId: e.execution?.workflowId ?? '', runId: e.execution?.runId ?? '' })),
    ...(res.nextPageToken?.length ? { nextPageToken: res.nextPageToken } : {}),
  };
}
