import type { Info } from '@temporalio/activity';
import { recordFields } from '../logger';

/** An activity's per-record log fields: the dispatch from its input, the workflow and run from Temporal. */
export function activityRecordFields(
  info: Info,
  tenant: string,
  dispatchKey: string,
  traceparent: string | undefined,
): Record<string, string> {
  return recordFields({
    tenant,
    dispatchKey,
    workflowId: info.workflowExecution?.workflowId,
    temporalRunId: info.workflowExecution?.runId,
    traceparent,
  });
}
