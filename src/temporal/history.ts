/**
 * Reads back what a `dispatch` execution was started with. The execution drops its input once its call is
 * scheduled (workflows/index.ts), so the rare dead letter takes it from the start event instead: the first event
 * of every run's history, resets included (a reset run's history begins with the original start).
 */
import { type Payload, defaultPayloadConverter } from '@temporalio/common';
import type { NativeConnection } from '@temporalio/worker';
import type { DispatchInput } from '../contract/workflow';

export function startInputReader(
  connection: NativeConnection,
  namespace: string,
): (workflowId: string, runId: string) => Promise<DispatchInput> {
  return async (workflowId, runId) => {
    const res = await connection.workflowService.getWorkflowExecutionHistory({
      namespace,
      execution: { workflowId, runId },
      maximumPageSize: 1,
    });
    const payload = res.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    if (!payload) throw new Error(`the history of ${workflowId} (run ${runId}) has no start input`);
    return defaultPayloadConverter.fromPayload<DispatchInput>(payload as Payload);
  };
}
