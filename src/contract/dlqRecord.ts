/**
 * Dead-letter records (contract §6): the builder, the reader for tools, and the original bytes for replay.
 * Node-only (Buffer, crypto): workflow code never loads it; workflows import ./names and ./dispatch only.
 */
import crypto from 'node:crypto';
import { withoutUserinfo } from '../redact';
import { type AttemptEntry, type AttemptHistory, historyFrom } from './attempts';
import { base64Decode, base64Encode } from './base64';
import {
  type RecordHeaders,
  type SourceHeaders,
  sourceHeaderBytes,
  sourceHeaders,
  sourceHeadersFromObject,
} from './dlqHeaders';
import { type JsonObject, decodeUtf8, isJsonObject } from './json';
import { topics, workflowId } from './names';

// ---------------------------------------------------------------------------------------------------------

export type DlqType = 'malformed_dispatch' | 'tenant_mismatch' | 'dispatch_failure';
export const DLQ_TYPES: readonly DlqType[] = ['malformed_dispatch', 'tenant_mismatch', 'dispatch_failure'];

/** Where the dead-lettered dispatch was read from. `timestamp` is the Kafka record timestamp as kafkajs gives it. */
export interface DlqSource {
  topic: string;
  partition: number;
  offset: string;
  timestamp: string;
}

/**
 * A dead letter's `source`: the coordinates, plus the record's key and headers as consumed (contract §6), so a replay
 * re-publishes the same message. The workflow input carries only the coordinates (`DlqSource`, whose shape is
 * pinned): the key and headers are read back from Kafka when a dispatch is dead-lettered.
 */
export interface DlqRecordSource extends DlqSource, SourceHeaders {
  /** The key as UTF-8 text; null when there was none, or when it was not UTF-8 (then `key_base64`). */
  key: string | null;
  key_base64?: string;
}

export type { RecordHeaders } from './dlqHeaders';

export interface DlqRecord {
  id: string;
  type: DlqType;
  tenant_id: string;
  dispatch_key: string | null;
  workflow_id: string | null;
  run_id: string | null;
  error: string;
  http_status: number | null;
  timestamp: string;
  retry_count: number;
  /** The attempts cap; null when there was none (the retry budget alone ended the retries). */
  max_retries: number | null;
  topic: string;
  target_url: string | null;
  source: DlqRecordSource;
  payload: string | null;
  /** Present only when the original value was not valid UTF-8; then `payload` is null. */
  payload_base64?: string;
  /** Dispatch failures: every runs-API attempt, oldest first (./attempts.ts; capped at 10 first + 40 last). */
  attempts?: AttemptEntry[];
  /** Present when the cap left attempts out: how many. */
  attempts_omitted?: number;
}

export interface DlqRecordInput {
  /** A fresh UUID; supplied by the caller so this module stays pure (and deterministic in workflows). */
  id: string;
  /** When the record was dead-lettered; supplied by the caller for the same reason. */
  timestamp: Date | number;
  type: DlqType;
  tenant: string;
  dispatchKey: string | null;
  runId?: string | null;
  error: string;
  httpStatus?: number | null;
  retryCount?: number;
  maxRetries?: number | null;
  targetUrl?: string | null;
  source: DlqSource;
  /** The source record's key and headers as consumed; absent when the record could not be read back. */
  key?: Uint8Array | string | null;
  headers?: RecordHeaders;
  /** The original record value (bytes as read from Kafka), or the dispatch re-serialized as text. */
  value: Uint8Array | string | null;
  /** The attempt history of a dispatch failure. */
  attempts?: AttemptHistory;
}

export function buildDlqRecord(input: DlqRecordInput): DlqRecord {
  // Only a dispatch_failure has a workflow behind it; for records rejected at ingest the id would point at
  // nothing, or worse at an unrelated earlier execution with the same dispatch_key.
  const workflow =
    input.type === 'dispatch_failure' && input.dispatchKey !== null
      ? workflowId(input.tenant, input.dispatchKey)
      : null;
  return {
    id: input.id,
    type: input.type,
    tenant_id: input.tenant,
    dispatch_key: input.dispatchKey,
    workflow_id: workflow,
    run_id: input.runId ?? null,
    error: input.error,
    http_status: input.httpStatus ?? null,
    timestamp: new Date(input.timestamp).toISOString(),
    retry_count: input.retryCount ?? 0,
    max_retries: input.maxRetries === undefined ? 0 : input.maxRetries,
    topic: topics.dlq(input.tenant),
    target_url: input.targetUrl == null ? null : withoutUserinfo(input.targetUrl),
    source: { ...input.source, ...recordKey(input.key ?? null), ...sourceHeaders(input.headers ?? {}) },
    ...dlqPayload(input.value),
    ...attemptFields(input.attempts),
  };
}

function attemptFields(
  history: AttemptHistory | undefined,
): Pick<DlqRecord, 'attempts' | 'attempts_omitted'> {
  if (!history) return {};
  return history.attempts_omitted > 0
    ? { attempts: history.attempts, attempts_omitted: history.attempts_omitted }
    : { attempts: history.attempts };
}

function recordKey(key: Uint8Array | string | null): Pick<DlqRecordSource, 'key' | 'key_base64'> {
  if (key === null || typeof key === 'string') return { key };
  const text = decodeUtf8(key, true);
  return text === undefined ? { key: null, key_base64: base64Encode(key) } : { key: text };
}

/**
 * The same dead letter without the record's value, for a DLQ topic that refuses the whole as too large (one
 * created by hand with a smaller max.message.bytes, or a DISPATCH_MAX_BYTES raised past DLQ_MAX_MESSAGE_BYTES):
 * the reason and the source coordinates still reach the DLQ, and the error says where the value is.
 */
export function withoutPayload(record: DlqRecord, encodedBytes: number): DlqRecord {
  const { payload_base64: _dropped, ...rest } = record;
  const s = record.source;
  return {
    ...rest,
    payload: null,
    error:
      `${record.error} [payload omitted: the dead letter was ${encodedBytes} bytes, more than ${record.topic} ` +
      `accepts; the original record is ${s.topic} partition ${s.partition} offset ${s.offset}]`,
  };
}

function dlqPayload(value: Uint8Array | string | null): Pick<DlqRecord, 'payload' | 'payload_base64'> {
  if (value === null || typeof value === 'string') return { payload: value };
  // Keep a BOM as U+FEFF so a replay re-publishes the exact original bytes.
  const text = decodeUtf8(value, true);
  return text === undefined ? { payload: null, payload_base64: base64Encode(value) } : { payload: text };
}

/** Credentials embedded in RUNS_API_URL (`http://user:secret@host`) must never reach a dead letter. */
export { withoutUserinfo };

/**
 * Reads a dead-letter value for tools (list, replay). Loose on purpose: records written by older versions
 * may lack optional fields, which default to null / 0; undefined only when the value is not a DLQ record.
 */
export function parseDlqRecord(value: Uint8Array | string | null): DlqRecord | undefined {
  if (value === null) return undefined;
  const text = typeof value === 'string' ? value : decodeUtf8(value);
  if (text === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isJsonObject(json)) return undefined;
  return dlqRecordFromObject(json);
}

function dlqRecordFromObject(o: JsonObject): DlqRecord | undefined {
  const source = isJsonObject(o['source']) ? dlqSourceFromObject(o['source']) : undefined;
  const type = o['type'];
  const required = [o['id'], o['tenant_id'], o['error'], o['timestamp'], o['topic']];
  if (!source || !DLQ_TYPES.includes(type as DlqType) || !required.every((v) => typeof v === 'string')) {
    return undefined;
  }
  const nullableFields = ['dispatch_key', 'workflow_id', 'run_id', 'target_url', 'payload'] as const;
  const nullable: Partial<Record<(typeof nullableFields)[number], string | null>> = {};
  for (const field of nullableFields) {
    const v = o[field] ?? null;
    if (v !== null && typeof v !== 'string') return undefined;
    nullable[field] = v;
  }
  const httpStatus = o['http_status'] ?? null;
  if (httpStatus !== null && typeof httpStatus !== 'number') return undefined;
  const base64 = o['payload_base64'];
  const history = historyFrom(o);
  return {
    id: o['id'] as string,
    type: type as DlqType,
    tenant_id: o['tenant_id'] as string,
    dispatch_key: nullable.dispatch_key ?? null,
    workflow_id: nullable.workflow_id ?? null,
    run_id: nullable.run_id ?? null,
    error: o['error'] as string,
    http_status: httpStatus,
    timestamp: o['timestamp'] as string,
    retry_count: typeof o['retry_count'] === 'number' ? o['retry_count'] : 0,
    max_retries:
      typeof o['max_retries'] === 'number' ? o['max_retries'] : o['max_retries'] === null ? null : 0,
    topic: o['topic'] as string,
    target_url: nullable.target_url ?? null,
    source,
    payload: nullable.payload ?? null,
    ...(typeof base64 === 'string' ? { payload_base64: base64 } : {}),
    ...attemptFields(history),
  };
}

function dlqSourceFromObject(s: JsonObject): DlqRecordSource | undefined {
  const { topic, partition, offset, timestamp, key, key_base64 } = s;
  if (typeof topic !== 'string' || typeof partition !== 'number' || !Number.isInteger(partition))
    return undefined;
  // Some writers emit offsets and timestamps as numbers; tools only need them as text.
  if (!isStringOrNumber(offset) || !isStringOrNumber(timestamp)) return undefined;
  // Dead letters written before key and headers were kept have neither: null and none.
  return {
    topic,
    partition,
    offset: String(offset),
    timestamp: String(timestamp),
    key: typeof key === 'string' ? key : null,
    ...(typeof key_base64 === 'string' ? { key_base64 } : {}),
    ...sourceHeadersFromObject(s),
  };
}

/** A dead letter's source record key, as bytes to re-publish on replay; null when it had none. */
export function dlqRecordKey(record: DlqRecord): Uint8Array | null {
  if (record.source.key !== null) return new TextEncoder().encode(record.source.key);
  if (record.source.key_base64 !== undefined) return base64Decode(record.source.key_base64) ?? null;
  return null;
}

/** A dead letter's source record headers, as bytes to re-publish on replay (./dlqHeaders.ts). */
export function dlqRecordHeaders(record: DlqRecord): Record<string, Buffer | Buffer[]> {
  return sourceHeaderBytes(record.source);
}

function isStringOrNumber(value: unknown): value is string | number {
  return typeof value === 'string' || typeof value === 'number';
}

/**
 * The original record value of a dead letter, as bytes to re-publish on replay; null for a tombstone;
 * undefined when payload_base64 is not valid base64.
 */
export function dlqRecordPayload(record: DlqRecord): Uint8Array | null | undefined {
  if (record.payload !== null) return new TextEncoder().encode(record.payload);
  if (record.payload_base64 !== undefined) return base64Decode(record.payload_base64);
  return null;
}

/**
 * A DLQ record id derived from what the record is about (an execution, or a source record's coordinates), in
 * UUID form. A write repeated after a crash — a retried activity, a record redelivered to a restarted
 * ingester — carries the same id, so DLQ consumers (and `dlq replay`) can tell a repeat from a new failure.
 */
export function dlqRecordId(seed: string): string {
  const h = crypto.createHash('sha256').update(seed).digest('hex');
  const variant = ((parseInt(h.slice(16, 17), 16) & 3) | 8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * The id of a dead letter about a record rejected at ingest: its coordinates, and what tells it from another
 * record at the same coordinates (a topic deleted and made anew starts its offsets at 0 again): its Kafka
 * timestamp and a digest of its key and value. A redelivered record has all of them unchanged, so its id too.
 */
export function sourceRecordDlqId(
  source: DlqSource,
  key: Uint8Array | string | null,
  value: Uint8Array | string | null,
): string {
  const digest = crypto.createHash('sha256');
  for (const part of [key, value]) {
    if (part === null) {
      digest.update('-');
      continue;
    }
    const bytes = typeof part === 'string' ? Buffer.from(part) : part;
    digest.update(`${bytes.byteLength}:`).update(bytes);
  }
  const { topic, partition, offset, timestamp } = source;
  return dlqRecordId(`${topic}/${partition}/${offset}/${timestamp}/${digest.digest('hex')}`);
}
