/**
 * Which failed workflow starts are this record's own fault. A start is the record's fault only when the same
 * start with this record's values replaced by any other valid record's would be accepted: then retrying it
 * can never succeed and would stall the partition behind it, so the record is dead-lettered with the server's
 * reason. Everything else is an outage the ingester waits out (its partition paused, retried, /readyz naming
 * the server's reason), and nothing is dead-lettered for it.
 *
 * Temporal answers INVALID_ARGUMENT for both kinds, so the code alone cannot tell them apart. From its start
 * path (frontend `prepareStartWorkflowRequest`, the search attribute validator, history `ValidateStart`):
 * - the record's own: its input over the blob size limit, its memo over the memo limit, one of its search
 *   attribute values (or their total) over the size limits, a value Temporal cannot index as Keyword, a workflow
 *   id (made from its dispatch_key) over the id length limit;
 * - the namespace's: a search attribute the starts set that the namespace does not define (removed, or never
 *   registered: "… has no mapping defined for search attribute …", "search attribute … is not defined"), one
 *   registered with another type, a lowered limit on the number of attributes, the id policies or task queue the
 *   relay's configuration sets.
 * So an INVALID_ARGUMENT is the record's own only when the server's reason is one of the per-record answers
 * below, each matched as the server words it (kept by test/it_temporal_refusal.test.ts against a real server);
 * an answer not recognised here is an outage, never a dead letter. Every other code (UNAVAILABLE,
 * DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, credentials, a missing namespace) is an outage too.
 */
import { GRPC, grpcStatus } from './grpcStatus';

export interface StartRefusal {
  code: string;
  details: string;
}

/** The server's per-record INVALID_ARGUMENT answers to a start (go.temporal.io/server, v1.2x). */
const RECORD_REFUSALS: readonly RegExp[] = [
  // common.ErrBlobSizeExceedsLimit: the input over limit.blobSize.error.
  /^Blob data size exceeds limit\.?$/,
  // common.ErrMemoSizeExceedsLimit (the memo carries the record's source coordinates).
  /^Memo size exceeds limit\.?$/,
  // searchattribute.Validator.ValidateSize: one value, or all of them, over the namespace's size limits.
  /^search attribute \S+ value size \d+ exceeds size limit \d+$/,
  /^total size of search attributes \d+ exceeds size limit \d+$/,
  // searchattribute.Validator.Validate: a value the attribute's registered type (Keyword, as the relay
  // requires) cannot hold. Another type named here means the namespace registered it otherwise: an outage.
  /^invalid value for search attribute \S+ of type Keyword: /,
  // frontend errWorkflowIDTooLong and history's check of the same limit (limit.maxIDLength).
  /^WorkflowId length exceeds limit\.?$/,
  /^WorkflowId exceeds length limit\.?$/,
];

/**
 * The refusal when the failed start is this record's own fault; undefined for an outage (any other code, or an
 * INVALID_ARGUMENT about the namespace or one not recognised).
 */
export function startRefusal(err: unknown): StartRefusal | undefined {
  const status = grpcStatus(err);
  if (status?.code !== GRPC.INVALID_ARGUMENT) return undefined;
  const details = status.details.trim();
  return RECORD_REFUSALS.some((re) => re.test(details)) ? { code: 'INVALID_ARGUMENT', details } : undefined;
}

/** An INVALID_ARGUMENT start answer that is not the record's own: the namespace refuses every such start. */
export function namespaceRefusal(err: unknown): string | undefined {
  const status = grpcStatus(err);
  if (status?.code !== GRPC.INVALID_ARGUMENT || startRefusal(err)) return undefined;
  return status.details.trim();
}
