/* eslint-disable max-lines -- every outcome of one record decided in one function, read as one */
/**
 * Turns one Kafka record into its outcome: a started (or attached-to) `dispatch` workflow, a duplicate of a
 * dispatch already completed, or a dead letter. Throws only for infrastructure failures (Temporal or Kafka
 * unreachable, or refusing every start on the namespace), which the ingester retries without committing; a start
 * Temporal refuses for this record alone (temporal/startRefusal.ts) is dead-lettered.
 */
import { type Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { ValueError, type SearchAttributePair } from '@temporalio/common';
import type { KafkaRecord } from '../kafka/port';
import { INGEST } from '../config/vars/ingest';
import {
  WORKFLOW_TYPE,
  buildDlqRecord,
  dispatchRecordKey,
  validTraceparent,
  validateDispatch,
  workflowId,
  type DlqSource,
} from '../contract';
import { REDRIVE_COUNT_MEMO, recordRedriveCount, sourceRecordDlqId } from '../contract';
import type { DlqPublisher } from '../kafka/dlqPublisher';
import { type Logger, recordFields } from '../logger';
import { SEARCH_ATTRIBUTE_KEYS } from '../temporal/searchAttributes';
import { runsAgain } from './failedRun';
import { dispatchDetails, dispatchSummary } from './startMetadata';
import { namespaceRefusal, startRefusal } from '../temporal/startRefusal';
import { SpanKind, inSpan, recordContext } from '../tracing/tracing';
import type { DispatchOutcome } from '../metrics';
import type { DispatchInput, DispatchPolicy } from '../contract/workflow';

const SA = SEARCH_ATTRIBUTE_KEYS;
/**
 * Temporal refuses a start whose Keyword value is too large (2 KiB of JSON-encoded value by default, so 512
 * emoji or escaped control characters in a workflow_ref are enough), and a refused start would be retried
 * forever. A workflow_ref or goal_id past this is kept in the input, not indexed.
 */
const MAX_KEYWORD_BYTES = 1024;

function fitsKeyword(value: string): boolean {
  return Buffer.byteLength(JSON.stringify(value)) <= MAX_KEYWORD_BYTES;
}

/**
 * How a dispatch is started: id, id policies, search attributes and memo. Shared with the benchmark's ceiling
 * phase, so the bare-Temporal figure starts exactly what the ingester starts.
 */
export function dispatchStartOptions(taskQueue: string, input: DispatchInput, extra: StartExtras = {}) {
  const { tenantWeights = {}, redriveCount = 0 } = extra;
  const { tenant, dispatch, source } = input;
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
  return {
    taskQueue,
    workflowId: workflowId(tenant, dispatch.dispatch_key),
    args: [input] as [DispatchInput],
    // A closed dispatch is not started again by this start: a completed one never runs twice, and a failed
    // (dead-lettered) one runs anew only for a newer record, such as a replay (./failedRun.ts, then
    // FAILED_RUN_REUSE_POLICY); a redelivery while it runs attaches to the running execution.
    workflowIdReusePolicy: 'REJECT_DUPLICATE' as 'REJECT_DUPLICATE' | typeof FAILED_RUN_REUSE_POLICY,
    workflowIdConflictPolicy: 'USE_EXISTING' as const,
    // Temporal's task queue fairness: each tenant's backlog is served in turns with the others' (weighted by
    // POIMEN_TENANT_WEIGHTS) instead of first come, first served; the call's activity inherits it. A server
    // without fairness ignores it. Tenant names (≤ 63 bytes) fit the 64-byte key limit.
    priority: {
      fairnessKey: tenant,
      ...(tenantWeights[tenant] !== undefined ? { fairnessWeight: tenantWeights[tenant] } : {}),
    },
    typedSearchAttributes: searchAttributes,
    // The Web UI's summary column and the execution page's details (./startMetadata.ts).
    staticSummary: dispatchSummary(input),
    staticDetails: dispatchDetails(input),
    memo: {
      source_topic: source.topic,
      partition: source.partition,
      offset: source.offset,
      record_timestamp: source.timestamp,
      ...(redriveCount > 0 ? { [REDRIVE_COUNT_MEMO]: redriveCount } : {}),
    },
  };
}

/** What a start carries beside the workflow input. */
export interface StartExtras {
  /** Fairness weight per tenant (POIMEN_TENANT_WEIGHTS); a tenant not named has Temporal's default, 1. */
  tenantWeights?: Readonly<Record<string, number>>;
  /** The record's redrive count (its `poimen-redrive-count` header), kept in the memo for its dead letter. */
  redriveCount?: number;
}

/** The start that runs a failed dispatch anew, for a record newer than the one that started its run. */
const FAILED_RUN_REUSE_POLICY = 'ALLOW_DUPLICATE_FAILED_ONLY' as const;

/**
 * The most the input's JSON text grows when encoded as a JSON string inside the workflow input: each `"`, `\\`
 * and whitespace escape (`\n`) doubles; nothing grows more.
 */
const MAX_REENCODE_GROWTH = 2;
/** The input's own fields beside the dispatch: tenant, source coordinates, retry policy, traceparent. */
const INPUT_OVERHEAD_BYTES = 4096;

export interface StartContext {
  client: Client;
  dlq: DlqPublisher;
  taskQueue: string;
  maxBytes: number;
  /** Largest encoded workflow input Temporal is known to accept (its blob size limit, less headroom). */
  maxInputBytes: number;
  policy: DispatchPolicy;
  /** Deadline of one start call, so an outage surfaces as an error to retry rather than a hang. */
  startTimeoutMs: number;
  /** Fairness weight per tenant (POIMEN_TENANT_WEIGHTS); a tenant not named has Temporal's default, 1. */
  tenantWeights?: Readonly<Record<string, number>>;
}

/** A header's value; a header given more than once has no single value (W3C trace context: then invalid). */
function header(message: KafkaRecord, name: string): string | undefined {
  const raw = message.headers?.[name];
  if (Array.isArray(raw)) return raw.length === 1 ? raw[0]?.toString() : undefined;
  return raw === undefined ? undefined : raw.toString();
}

/** One record as the ingester hands it over: its tenant, where it was read, and the record itself. */
export interface DispatchRecord {
  tenant: string;
  topic: string;
  partition: number;
  message: KafkaRecord;
}

/** What a caller hears of a record's handling beside its outcome. */
export interface RecordHooks {
  /** Each record's outcome is logged here at debug, with the fields of recordFields (logger.ts). */
  log?: Logger;
  /** Called with the execution a record started or joined (the ingester's admission watches it close). */
  onStarted?: (workflowId: string, runId: string) => void;
}

export async function handleRecord(
  ctx: StartContext,
  record: DispatchRecord,
  hooks: RecordHooks = {},
): Promise<DispatchOutcome> {
  const { tenant, topic, partition, message } = record;
  const { log, onStarted } = hooks;
  const traceparent = validTraceparent(header(message, 'traceparent'));
  // The relay's hop as a span (consume → start), a child of the record's trace or a new root; the workflow start
  // inside it carries it on to the workflow (tracing/tracing.ts).
  const spanOptions = {
    kind: SpanKind.CONSUMER,
    parent: recordContext(traceparent),
    attributes: {
      'messaging.system': 'kafka',
      'messaging.destination.name': topic,
      'messaging.destination.partition.id': String(partition),
      'messaging.kafka.offset': message.offset,
      'poimen.tenant': tenant,
    },
  };
  return inSpan(`process ${topic}`, spanOptions, async (): Promise<DispatchOutcome> => {
    const source: DlqSource = { topic, partition, offset: message.offset, timestamp: message.timestamp };
    const deadLetter = async (
      type: 'malformed_dispatch' | 'tenant_mismatch',
      reason: string,
      dispatchKey: string | null,
    ): Promise<DispatchOutcome> => {
      const letter = buildDlqRecord({
        // Same source record, same id: a redelivery after a crash repeats the record, recognisably; another
        // record at the same offset (its topic made anew) has its own.
        id: sourceRecordDlqId(source, message.key, message.value),
        timestamp: Date.now(),
        type,
        tenant,
        dispatchKey,
        error: reason,
        source,
        key: message.key,
        headers: message.headers ?? {},
        value: message.value,
      });
      await ctx.dlq.publish(
        letter,
        dispatchKey !== null ? dispatchRecordKey(tenant, dispatchKey) : (message.key ?? null),
      );
      // No workflow_id: none was started for this record.
      log?.debug(
        {
          ...recordFields({ tenant, dispatchKey, traceparent }),
          offset: message.offset,
          outcome: 'dead_lettered',
          type,
          reason,
        },
        'record dead-lettered',
      );
      return 'dead_lettered';
    };
    const verdict = validateDispatch(message.value, { tenant, maxBytes: ctx.maxBytes });
    if (!verdict.ok) return deadLetter(verdict.type, verdict.reason, verdict.dispatchKey ?? null);

    const { dispatch } = verdict;
    const input: DispatchInput = {
      tenant,
      dispatch,
      source,
      policy: ctx.policy,
      ...(traceparent ? { traceparent } : {}),
    };
    // Temporal refuses a payload over its blob size limit (2 MiB by default) with INVALID_ARGUMENT, every time;
    // retried as an outage that would stall the partition. A record within DISPATCH_MAX_BYTES can still encode
    // larger (its input's text is escaped once more as a JSON string: `\"` becomes `\\\"`), so the encoded size
    // is what is checked. Encoding grows a record at most 2×, so only records that could pass the limit pay for
    // the extra encoding.
    let encodedBytes = 0;
    try {
      const raw = message.value?.length ?? 0;
      if (raw * MAX_REENCODE_GROWTH + INPUT_OVERHEAD_BYTES > ctx.maxInputBytes) {
        encodedBytes = Buffer.byteLength(JSON.stringify(input));
      }
    } catch (err) {
      // Only this record's shape can make this stringify fail (validation bounds depth, so this is a backstop).
      if (err instanceof RangeError) {
        return deadLetter(
          'malformed_dispatch',
          `the dispatch cannot be encoded: ${err.message}`,
          dispatch.dispatch_key,
        );
      }
      throw err;
    }
    if (encodedBytes > ctx.maxInputBytes) {
      return deadLetter(
        'malformed_dispatch',
        `workflow input encodes to ${encodedBytes} bytes, over the ${ctx.maxInputBytes} Temporal accepts (${INGEST.POIMEN_TEMPORAL_MAX_INPUT_BYTES.name})`,
        dispatch.dispatch_key,
      );
    }
    const options = dispatchStartOptions(ctx.taskQueue, input, {
      ...(ctx.tenantWeights ? { tenantWeights: ctx.tenantWeights } : {}),
      redriveCount: recordRedriveCount(message.headers),
    });
    const facts = { tenant, dispatchKey: dispatch.dispatch_key, workflowId: options.workflowId, traceparent };
    try {
      const start = (o: typeof options) =>
        ctx.client.connection.withDeadline(Date.now() + ctx.startTimeoutMs, () =>
          ctx.client.workflow.start(WORKFLOW_TYPE, o),
        );
      const handle = await start(options).catch(async (err: unknown) => {
        // The dispatch's newest run is closed: refused again (a duplicate) unless this record runs it anew.
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        if (!(await runsAgain(ctx.client, options.workflowId, source, Date.now() + ctx.startTimeoutMs)))
          throw err;
        return start({ ...options, workflowIdReusePolicy: FAILED_RUN_REUSE_POLICY });
      });
      onStarted?.(options.workflowId, handle.firstExecutionRunId);
      // Also when the start joined a running execution (USE_EXISTING): the run id says which one.
      log?.debug(
        {
          ...recordFields({ ...facts, temporalRunId: handle.firstExecutionRunId }),
          offset: message.offset,
          outcome: 'started',
        },
        'record started its workflow',
      );
      return 'started';
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) {
        log?.debug(
          { ...recordFields(facts), offset: message.offset, outcome: 'duplicate' },
          'record already handled: its dispatch completed, or failed for this record or an earlier one',
        );
        return 'duplicate';
      }
      const refusal = startRefusal(err);
      if (refusal) {
        return deadLetter(
          'malformed_dispatch',
          `Temporal refused the start (${refusal.code}): ${refusal.details}`,
          dispatch.dispatch_key,
        );
      }
      // Refused for the namespace, not this record (an attribute removed, a limit lowered): an outage, whose reason
      // names the server's answer (on /readyz and the paused partition's log line).
      const nsReason = namespaceRefusal(err);
      if (nsReason !== undefined) {
        throw new Error(`Temporal refuses starts on this namespace (INVALID_ARGUMENT): ${nsReason}`, {
          cause: err,
        });
      }
      // The SDK could not encode the input: deterministic for this record, so retrying would stall the
      // partition. (A RangeError here could also be memory pressure, which must not dead-letter a valid record.)
      if (err instanceof ValueError) {
        return deadLetter(
          'malformed_dispatch',
          `Temporal cannot encode the dispatch: ${err.message}`,
          dispatch.dispatch_key,
        );
      }
      throw err;
    }
  });
}
