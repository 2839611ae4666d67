/**
 * Turns one Kafka record into its outcome: a started (or attached-to) `dispatch` workflow, a duplicate of a
 * dispatch already completed, or a dead letter. Throws only for infrastructure failures (Temporal or Kafka
 * unreachable), which the ingester retries in place without committing.
 */
import { type Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import {
  SearchAttributeType,
  ValueError,
  defineSearchAttributeKey,
  type SearchAttributePair,
} from '@temporalio/common';
import type { KafkaMessage } from 'kafkajs';
import {
  WORKFLOW_TYPE,
  buildDlqRecord,
  dispatchRecordKey,
  validTraceparent,
  validateDispatch,
  workflowId,
  type DlqSource,
} from '../contract';
import type { DlqPublisher } from '../kafka/dlqPublisher';
import type { DispatchOutcome } from '../metrics';
import type { DispatchInput, DispatchPolicy } from '../workflows/types';

const SA = {
  TenantId: defineSearchAttributeKey('TenantId', SearchAttributeType.KEYWORD),
  DispatchKey: defineSearchAttributeKey('DispatchKey', SearchAttributeType.KEYWORD),
  WorkflowRef: defineSearchAttributeKey('WorkflowRef', SearchAttributeType.KEYWORD),
  GoalId: defineSearchAttributeKey('GoalId', SearchAttributeType.KEYWORD),
};
/**
 * Temporal refuses a start whose Keyword value is too large (2 KiB of JSON-encoded value by default, so 512
 * emoji or escaped control characters in a workflow_ref are enough), and a refused start would be retried
 * forever. A workflow_ref or goal_id past this is kept in the input, not indexed.
 */
const MAX_KEYWORD_BYTES = 1024;

function fitsKeyword(value: string): boolean {
  return Buffer.byteLength(JSON.stringify(value)) <= MAX_KEYWORD_BYTES;
}

export interface StartContext {
  client: Client;
  dlq: DlqPublisher;
  taskQueue: string;
  maxBytes: number;
  policy: DispatchPolicy;
  /** Deadline of one start call, so an outage surfaces as an error to retry rather than a hang. */
  startTimeoutMs: number;
}

function header(message: KafkaMessage, name: string): string | undefined {
  const raw = message.headers?.[name];
  const first = Array.isArray(raw) ? raw[0] : raw;
  return first === undefined ? undefined : first.toString();
}

export async function handleRecord(
  ctx: StartContext,
  tenant: string,
  topic: string,
  partition: number,
  message: KafkaMessage,
): Promise<DispatchOutcome> {
  const source: DlqSource = { topic, partition, offset: message.offset, timestamp: message.timestamp };
  const deadLetter = async (
    type: 'malformed_dispatch' | 'tenant_mismatch',
    reason: string,
    dispatchKey: string | null,
  ): Promise<DispatchOutcome> => {
    const record = buildDlqRecord({
      id: crypto.randomUUID(),
      timestamp: Date.now(),
      type,
      tenant,
      dispatchKey,
      error: reason,
      source,
      value: message.value,
    });
    await ctx.dlq.publish(
      record,
      dispatchKey !== null ? dispatchRecordKey(tenant, dispatchKey) : (message.key ?? null),
    );
    return 'dead_lettered';
  };
  const verdict = validateDispatch(message.value, { tenant, maxBytes: ctx.maxBytes });
  if (!verdict.ok) return deadLetter(verdict.type, verdict.reason, verdict.dispatchKey ?? null);

  const { dispatch } = verdict;
  const traceparent = validTraceparent(header(message, 'traceparent'));
  const input: DispatchInput = {
    tenant,
    dispatch,
    source,
    policy: ctx.policy,
    ...(traceparent ? { traceparent } : {}),
  };
  const searchAttributes: SearchAttributePair[] = [
    { key: SA.TenantId, value: tenant },
    { key: SA.DispatchKey, value: dispatch.dispatch_key },
  ];
  if (fitsKeyword(dispatch.workflow_ref)) {
    searchAttributes.push({ key: SA.WorkflowRef, value: dispatch.workflow_ref });
  }
  if (dispatch.goal_id !== null && fitsKeyword(dispatch.goal_id)) {
    searchAttributes.push({ key: SA.GoalId, value: dispatch.goal_id });
  }
  try {
    await ctx.client.connection.withDeadline(Date.now() + ctx.startTimeoutMs, () =>
      ctx.client.workflow.start(WORKFLOW_TYPE, {
        taskQueue: ctx.taskQueue,
        workflowId: workflowId(tenant, dispatch.dispatch_key),
        args: [input],
        // A completed dispatch never runs twice; a failed (dead-lettered) one may run anew on replay;
        // a redelivery while it runs attaches to the running execution.
        workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: searchAttributes,
        memo: { source_topic: topic, partition, offset: message.offset, record_timestamp: message.timestamp },
      }),
    );
    return 'started';
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return 'duplicate';
    // Encoding the input failed in this process: deterministic for this record, so retrying would stall the
    // partition. Validation keeps such inputs out (INPUT_MAX_DEPTH); this is the backstop.
    if (err instanceof ValueError || err instanceof RangeError) {
      return deadLetter(
        'malformed_dispatch',
        `Temporal cannot encode the dispatch: ${err.message}`,
        dispatch.dispatch_key,
      );
    }
    throw err;
  }
}
