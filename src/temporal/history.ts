/**
 * Reads back what a `dispatch` execution was started with. The execution drops its input once its call is
 * scheduled (workflows/index.ts), so the rare dead letter takes it from the start event instead: the first event
 * of every run's history, resets included (a reset run's history begins with the original start), with the start
 * memo's redrive count.
 */
import { type Payload, defaultPayloadConverter } from '@temporalio/common';
import type { NativeConnection } from '@temporalio/worker';
import { REDRIVE_COUNT_MEMO, countOf } from '../contract/dlqHeaders';
import type { DispatchInput } from '../contract/workflow';

/** What an execution was started with: its argument, and the redrive count its start memo carries (0 if none). */
export interface StartedWith {
  input: DispatchInput;
  redriveCount: number;
}

export function startReader(
  connection: NativeConnection,
  namespace: string,
): (workflowId: string, runId: string) => Promise<StartedWith> {
  return async (workflowId, runId) => {
    const res = await connection.workflowService.getWorkflowExecutionHistory({
      namespace,
      execution: { workflowId, runId },
      maximumPageSize: 1,
    });
    const started = res.history?.events?.[0]?.workflowExecutionStartedEventAttributes;
    const payload = started?.input?.payloads?.[0];
    if (!payload) throw new Error(`the history of ${workflowId} (run ${runId}) has no start input`);
    return {
      input: defaultPayloadConverter.fromPayload<DispatchInput>(payload as Payload),
      redriveCount: memoCount(started?.memo?.fields?.[REDRIVE_COUNT_MEMO]),
    };
  };
}

/** The memo's redrive count; 0 when absent or unreadable, so a bad memo never fails the call that reads the input. */
function memoCount(field: unknown): number {
  if (!field) return 0;
  try {
    return countOf(defaultPayloadConverter.fromPayload<unknown>(field as Payload));
  } catch {
    return 0;
  }
}
