/**
 * Names fixed by ../shared/SPEC.md. Everything other systems and operators depend on lives here,
 * so a rename is one diff. Pure module: safe to import from workflow code.
 */

export const TENANT_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const DEFAULT_DISPATCH_TOPIC_PATTERN = '^poimen\\.[a-z0-9][a-z0-9_-]{0,62}\\.dispatch$';

export const WORKFLOW_TYPE = 'dispatch';
export const DEFAULT_TASK_QUEUE = 'poimen-dispatch';
export const DLQ_REPLAY_GROUP = 'poimen-relay-dlq';
export const DLQ_RETENTION_MS = 1_209_600_000;
/**
 * `max.message.bytes` of the DLQ topics the relay creates. A dead letter carries the record it refuses as JSON
 * text, which escaping grows up to 6× (a control character becomes `\u0001`), so the broker's 1 MB default
 * would refuse the dead letter of a record that was itself accepted. 8 MiB holds any record within the default
 * DISPATCH_MAX_BYTES (1 MiB); what still does not fit is dead-lettered without its payload (`withoutPayload`).
 */
export const DLQ_MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

/** Keyword search attributes the relay sets on every dispatch execution (SPEC §4). */
export const SEARCH_ATTRIBUTE_NAMES = ['TenantId', 'DispatchKey', 'WorkflowRef', 'GoalId'] as const;
export type SearchAttributeName = (typeof SEARCH_ATTRIBUTE_NAMES)[number];

export function isValidTenant(tenant: string): boolean {
  return TENANT_PATTERN.test(tenant);
}

export const topics = {
  dispatch: (tenant: string): string => `poimen.${tenant}.dispatch`,
  events: (tenant: string): string => `poimen.${tenant}.events`,
  dlq: (tenant: string): string => `poimen.${tenant}.dispatch.dlq`,
};

export function workflowId(tenant: string, dispatchKey: string): string {
  return `dispatch:${tenant}:${dispatchKey}`;
}

// ---------------------------------------------------------------------------------------------------------
// Dispatch topics and messages (SPEC §2, §3)
// ---------------------------------------------------------------------------------------------------------

const DISPATCH_TOPIC = /^poimen\.(.+)\.dispatch$/;

/** The tenant of a `poimen.<tenant>.dispatch` topic; undefined for any other topic (incl. `.dispatch.dlq`). */
export function tenantFromTopic(topic: string): string | undefined {
  const tenant = DISPATCH_TOPIC.exec(topic)?.[1];
  return tenant !== undefined && isValidTenant(tenant) ? tenant : undefined;
}

/**
 * The `traceparent` header of a dispatch record when it is valid W3C Trace Context (level 1, §3.2), else
 * undefined: the spec requires a vendor to ignore an invalid traceparent (and start a new trace) rather than
 * propagate it, and forwarding arbitrary header text to the runs API would let a producer inject into it.
 * A version above 00 may append fields; it is forwarded as the version-00 header this relay speaks (the first
 * four fields, version set to 00), as the spec asks of a vendor that parsed a higher version.
 */
export function validTraceparent(value: string | undefined): string | undefined {
  if (value === undefined || value.length < 55 || value.length > 512) return undefined;
  const m = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-[^\s]*)?$/.exec(value.trim());
  if (!m) return undefined;
  const [, version, traceId, parentId, , rest] = m;
  if (version === 'ff' || /^0+$/.test(traceId!) || /^0+$/.test(parentId!)) return undefined;
  if (version === '00') return rest === undefined ? m[0] : undefined;
  return `00${m[0].slice(2, 55)}`;
}

/** Kafka key of a dispatch or dead-letter record, by convention (SPEC §2, §6). */
export function dispatchRecordKey(tenant: string, dispatchKey: string): string {
  return `${tenant}:${dispatchKey}`;
}

/**
 * A validated dispatch as the relay carries it: the four fields of the `POST /v1/runs` body (SPEC §5), with
 * `input` kept as the record's own JSON text. Why text, not the parsed value: a parsed input lives in the
 * workflow sandbox as objects, 10–20× its size (a 1 MB array of `{}` is ~300,000 objects), and a few such
 * records at once exhausted the worker's heap; as text it costs its size once. It also reaches the API exactly
 * as the producer wrote it: no number is re-formatted or rounded (integers beyond 2^53 keep every digit).
 */
export interface Dispatch {
  workflow_ref: string;
  /** The `input` value's JSON text, verbatim from the record (whitespace included). */
  input_json: string;
  goal_id: string | null;
  dispatch_key: string;
}

/** A dispatch without its input: what a `dispatch` execution keeps once its call is scheduled. */
export type DispatchHead = Omit<Dispatch, 'input_json'>;

/** How executions started before `input_json` carry the dispatch: `input` as a parsed value. */
export interface LegacyDispatch {
  workflow_ref: string;
  input: unknown;
  goal_id: string | null;
  dispatch_key: string;
}

/**
 * The exact `POST /v1/runs` body: the four fields in SPEC order, `input` spliced in as its JSON text. Also the
 * text of a dispatch_failure dead letter's payload, so a replay publishes what the API would have received.
 */
export function runsApiBody(d: Dispatch | LegacyDispatch): string {
  const [before, after] = runsApiBodyAround(d);
  return `${before}${'input_json' in d ? d.input_json : JSON.stringify(d.input ?? null)}${after}`;
}

/** The body's text before and after the `input` value, for a caller that holds the input as bytes. */
export function runsApiBodyAround(d: DispatchHead): [string, string] {
  return [
    `{"workflow_ref":${JSON.stringify(d.workflow_ref)},"input":`,
    `,"goal_id":${JSON.stringify(d.goal_id)},"dispatch_key":${JSON.stringify(d.dispatch_key)}}`,
  ];
}

export const WORKFLOW_REF_MAX_CHARS = 512;
export const DISPATCH_KEY_MAX_CHARS = 256;
/**
 * How deep `input` may nest arrays and objects. JSON.parse copes with any depth, but JSON.stringify (run by the
 * Temporal payload converter, the workflow and the activity) recurses and overflows the stack near a few
 * thousand levels, which would turn one record into an endless retry; 512 is far above any real input.
 */
export const INPUT_MAX_DEPTH = 512;
/** The top-level fields SPEC §3 gives a meaning to; naming one of them twice makes the record ambiguous. */
const GOVERNED_FIELDS = new Set(['workflow_ref', 'input', 'goal_id', 'dispatch_key', 'tenant_id']);
const DISPATCH_KEY_CHARS = /^[A-Za-z0-9._:@/-]+$/;
const DISPATCH_KEY_BAD_CHAR = /[^A-Za-z0-9._:@/-]/u;

export type DispatchValidation =
  | { ok: true; dispatch: Dispatch }
  | {
      ok: false;
      type: 'malformed_dispatch' | 'tenant_mismatch';
      reason: string;
      /** The record's dispatch_key when that field itself is valid, so a dead letter can be keyed by it. */
      dispatchKey?: string;
    };

type JsonObject = Record<string, unknown>;
type FieldCheck = { ok: true } | { ok: false; reason: string };
const FIELD_OK: FieldCheck = { ok: true };

/**
 * Applies every rule of SPEC §3 to a raw record value; the first broken rule is reported with a reason an
 * operator can act on without opening the payload.
 *
 * `input` is carried as its JSON text, cut from the record, so numbers reach the API digit-for-digit. A number
 * beyond the double range (1e400) is still rejected: most JSON readers (JavaScript's among them) turn it into
 * Infinity or null, so the API would not see the value the producer meant. Never throws.
 */
export function validateDispatch(
  value: Uint8Array | null,
  opts: { tenant: string; maxBytes: number },
): DispatchValidation {
  const parsed = parseRecordValue(value, opts.maxBytes);
  if (!parsed.ok) return malformed(parsed.reason);
  const { value: obj, inputJson } = parsed;

  const key = checkDispatchKey(obj);
  const dispatchKey = key.ok ? (obj['dispatch_key'] as string) : undefined;
  const fail = (reason: string): DispatchValidation => malformed(reason, dispatchKey);

  for (const check of [checkWorkflowRef, checkInput, checkGoalId]) {
    const result = check(obj);
    if (!result.ok) return fail(result.reason);
  }
  if (!key.ok) return fail(key.reason);

  const tenantCheck = checkTenantId(obj, opts.tenant);
  if (!tenantCheck.ok) {
    return { ok: false, type: 'tenant_mismatch', reason: tenantCheck.reason, ...withKey(dispatchKey) };
  }

  return {
    ok: true,
    dispatch: {
      workflow_ref: obj['workflow_ref'] as string,
      // checkInput passed, so the scan found the value's text.
      input_json: inputJson!,
      goal_id: (Object.hasOwn(obj, 'goal_id') ? obj['goal_id'] : null) as string | null,
      dispatch_key: obj['dispatch_key'] as string,
    },
  };
}

function malformed(reason: string, dispatchKey?: string): DispatchValidation {
  return { ok: false, type: 'malformed_dispatch', reason, ...withKey(dispatchKey) };
}

function withKey(dispatchKey: string | undefined): { dispatchKey?: string } {
  return dispatchKey === undefined ? {} : { dispatchKey };
}

function parseRecordValue(
  value: Uint8Array | null,
  maxBytes: number,
): { ok: true; value: JsonObject; inputJson: string | undefined } | { ok: false; reason: string } {
  if (value === null) return { ok: false, reason: 'tombstone: record value is null' };
  // Size first: a 100 MB record must not be decoded and parsed just to be rejected.
  if (value.byteLength > maxBytes) {
    return { ok: false, reason: `value is ${value.byteLength} bytes, over DISPATCH_MAX_BYTES ${maxBytes}` };
  }
  if (value.byteLength === 0) return { ok: false, reason: 'value is empty (0 bytes)' };
  const text = decodeUtf8(value);
  if (text === undefined)
    return { ok: false, reason: `value is not valid UTF-8: ${describeUtf8Error(value)}` };
  if (/^[ \t\r\n]*$/.test(text)) {
    return { ok: false, reason: `value is only whitespace (${value.byteLength} bytes)` };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return { ok: false, reason: `value is not valid JSON: ${jsonErrorDetail(text, err)}` };
  }
  if (!isJsonObject(json))
    return { ok: false, reason: `value is not a JSON object (got ${jsonTypeName(json)})` };
  const scanned = scanTopLevel(text);
  if ('error' in scanned) return { ok: false, reason: scanned.error };
  return { ok: true, value: json, inputJson: scanned.inputJson };
}

function jsonErrorDetail(text: string, err: unknown): string {
  if (text.startsWith('\uFEFF')) return 'starts with a second byte order mark (U+FEFF)';
  const nul = text.indexOf('\u0000');
  if (nul >= 0) return `NUL character at position ${nul} (UTF-16 or binary data?)`;
  const message = err instanceof Error ? err.message : String(err);
  // V8 gives one message for many faults (a comment, single quotes, an unquoted name): show what is there.
  const at = /at position (\d+)/.exec(message);
  if (!at) return message;
  const near = text.slice(Number(at[1]), Number(at[1]) + 16);
  if (near === '') return `${message} (at the end)`;
  return `${message} (near ${JSON.stringify(near)}${near.length === 16 ? '…' : ''})`;
}

const JSON_WHITESPACE = new Set([' ', '\t', '\n', '\r']);

/**
 * One iterative pass over text already known to be a JSON object (so no recursion, whatever the depth): the
 * first governed field named twice, `input` nesting deeper than INPUT_MAX_DEPTH, or a number in `input` beyond
 * the double range; else the text of the `input` value (undefined when there is no such field).
 */
function scanTopLevel(text: string): { error: string } | { inputJson: string | undefined } {
  const seen = new Set<string>();
  let depth = 0;
  let expectKey = false;
  let field: string | undefined;
  // Where the top-level `input` value starts (just after its colon) and ends (its closing `,` or `}`).
  let inputStart = -1;
  let inputEnd = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charAt(i);
    if (depth === 1 && inputStart >= 0 && inputEnd < 0 && (c === ',' || c === '}')) inputEnd = i;
    if (c === ':' && depth === 1 && field === 'input' && inputStart < 0) {
      inputStart = i + 1;
    } else if (c === '"') {
      let end = i + 1;
      while (text.charAt(end) !== '"') end += text.charAt(end) === '\\' ? 2 : 1;
      if (depth === 1 && expectKey) {
        const raw = text.slice(i, end + 1);
        field = raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
        expectKey = false;
        if (GOVERNED_FIELDS.has(field)) {
          if (seen.has(field)) return { error: `field ${field} appears more than once (ambiguous record)` };
          seen.add(field);
        }
      }
      i = end;
    } else if (c === '{' || c === '[') {
      depth++;
      if (depth === 1) expectKey = true;
      else if (field === 'input' && depth - 1 > INPUT_MAX_DEPTH) {
        return { error: `field input nests arrays/objects more than ${INPUT_MAX_DEPTH} levels deep` };
      }
    } else if (c === '}' || c === ']') {
      depth--;
    } else if (c === ',') {
      if (depth === 1) expectKey = true;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      let end = i + 1;
      while (end < text.length && /[0-9eE+\-.]/.test(text.charAt(end))) end++;
      const literal = text.slice(i, end);
      if (field === 'input' && !Number.isFinite(Number(literal))) {
        return {
          error: `field input has the number ${truncate(literal, 40)}, beyond the range of a double (most JSON readers, the API's included, would read Infinity or null)`,
        };
      }
      i = end - 1;
    }
  }
  if (inputStart < 0 || inputEnd < 0) return { inputJson: undefined };
  // JSON.parse accepted the text, so the span holds exactly one value, possibly with whitespace around it.
  while (JSON_WHITESPACE.has(text.charAt(inputStart))) inputStart++;
  while (JSON_WHITESPACE.has(text.charAt(inputEnd - 1))) inputEnd--;
  return { inputJson: text.slice(inputStart, inputEnd) };
}

/** Where and how bytes that TextDecoder refused break UTF-8 (RFC 3629), for a reason an operator can act on. */
function describeUtf8Error(bytes: Uint8Array): string {
  const hex = (b: number | undefined) => `0x${(b ?? 0).toString(16).padStart(2, '0')}`;
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'starts with a UTF-16 LE byte order mark (FF FE)';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'starts with a UTF-16 BE byte order mark (FE FF)';
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b < 0x80) continue;
    const at = `at byte offset ${i}`;
    if (b < 0xc0) return `unexpected continuation byte ${hex(b)} ${at}`;
    if (b < 0xc2) return `overlong encoding (lead byte ${hex(b)}) ${at}`;
    if (b > 0xf4) return `byte ${hex(b)} ${at} never appears in UTF-8`;
    const need = b < 0xe0 ? 1 : b < 0xf0 ? 2 : 3;
    for (let k = 1; k <= need; k++) {
      const next = bytes[i + k];
      if (next === undefined) return `truncated ${need + 1}-byte sequence ${at} (value ends)`;
      if ((next & 0xc0) !== 0x80) {
        return `truncated ${need + 1}-byte sequence ${at} (${hex(next)} is not a continuation byte)`;
      }
    }
    const second = bytes[i + 1]!;
    if ((b === 0xe0 && second < 0xa0) || (b === 0xf0 && second < 0x90)) {
      return `overlong encoding (${hex(b)} ${hex(second)}) ${at}`;
    }
    if (b === 0xed && second >= 0xa0) return `UTF-16 surrogate encoded as UTF-8 (CESU-8) ${at}`;
    if (b === 0xf4 && second >= 0x90) return `code point above U+10FFFF ${at}`;
    i += need;
  }
  return 'invalid byte sequence';
}

function checkWorkflowRef(obj: JsonObject): FieldCheck {
  const bounded = checkBoundedString(obj, 'workflow_ref', WORKFLOW_REF_MAX_CHARS);
  return bounded.ok ? checkWellFormed('workflow_ref', obj['workflow_ref'] as string) : bounded;
}

/**
 * workflow_ref and goal_id become Keyword search attributes and log fields, where a lone UTF-16 surrogate (a
 * `\ud800` escape without its pair) is not text and gets replaced by U+FFFD, so they must be valid Unicode.
 * (`input` may carry them: it travels as JSON, where the escape survives.)
 */
function checkWellFormed(field: string, value: string): FieldCheck {
  const lone = LONE_SURROGATE.exec(value);
  if (!lone) return FIELD_OK;
  const code = lone[0].charCodeAt(0).toString(16).padStart(4, '0');
  const at = codePointLength(value.slice(0, lone.index)) + 1;
  return {
    ok: false,
    reason: `field ${field} has a lone UTF-16 surrogate (\\u${code} at character ${at}), not valid Unicode`,
  };
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function checkInput(obj: JsonObject): FieldCheck {
  // Any JSON value, null included; only absence is an error, because the API body always has all four fields.
  return Object.hasOwn(obj, 'input') ? FIELD_OK : { ok: false, reason: 'missing field input' };
}

function checkGoalId(obj: JsonObject): FieldCheck {
  if (!Object.hasOwn(obj, 'goal_id')) return FIELD_OK;
  const goalId = obj['goal_id'];
  if (goalId === null) return FIELD_OK;
  if (typeof goalId === 'string') return checkWellFormed('goal_id', goalId);
  return { ok: false, reason: `field goal_id must be a string or null (got ${jsonTypeName(goalId)})` };
}

function checkDispatchKey(obj: JsonObject): FieldCheck {
  const bounded = checkBoundedString(obj, 'dispatch_key', DISPATCH_KEY_MAX_CHARS);
  if (!bounded.ok) return bounded;
  const key = obj['dispatch_key'] as string;
  if (DISPATCH_KEY_CHARS.test(key)) return FIELD_OK;
  const bad = DISPATCH_KEY_BAD_CHAR.exec(key);
  const where = bad
    ? ` (first: ${JSON.stringify(bad[0])} at character ${codePointLength(key.slice(0, bad.index)) + 1})`
    : '';
  return { ok: false, reason: `field dispatch_key contains characters outside [A-Za-z0-9._:@/-]${where}` };
}

function checkBoundedString(obj: JsonObject, field: string, maxChars: number): FieldCheck {
  if (!Object.hasOwn(obj, field)) return { ok: false, reason: `missing field ${field}` };
  const value = obj[field];
  if (typeof value !== 'string') {
    return { ok: false, reason: `field ${field} must be a string (got ${jsonTypeName(value)})` };
  }
  // The limits are in characters as a person counts them, so an emoji is one, not two UTF-16 units.
  const chars = codePointLength(value);
  if (chars === 0) return { ok: false, reason: `field ${field} is empty, minimum 1 character` };
  if (chars > maxChars)
    return { ok: false, reason: `field ${field} has ${chars} characters, maximum ${maxChars}` };
  return FIELD_OK;
}

function checkTenantId(obj: JsonObject, tenant: string): FieldCheck {
  // A null tenant_id claims no tenant, so it is treated like an absent one rather than as a misroute.
  const claimed = obj['tenant_id'];
  if (!Object.hasOwn(obj, 'tenant_id') || claimed === null || claimed === tenant) return FIELD_OK;
  return {
    ok: false,
    reason: `tenant_id ${truncate(JSON.stringify(claimed), 100)} does not match the topic's tenant ${JSON.stringify(tenant)}`,
  };
}

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function jsonTypeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function codePointLength(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/** Strict UTF-8 decode (BOM stripped); undefined when the bytes are not valid UTF-8. */
function decodeUtf8(bytes: Uint8Array, keepBom = false): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: keepBom }).decode(bytes);
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Dead-letter records (SPEC §6)
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
 * A dead letter's `source`: the coordinates, plus the record's key and headers as consumed (SPEC §6), so a replay
 * re-publishes the same message. The workflow input carries only the coordinates (`DlqSource`, whose shape is
 * pinned): the key and headers are read back from Kafka when a dispatch is dead-lettered.
 */
export interface DlqRecordSource extends DlqSource {
  /** The key as UTF-8 text; null when there was none, or when it was not UTF-8 (then `key_base64`). */
  key: string | null;
  key_base64?: string;
  /** Header values as UTF-8 text; a header given more than once keeps every value, in order. */
  headers: Record<string, string | string[]>;
}

/** Kafka headers as kafkajs gives them (Buffer or string values, arrays for repeated headers). */
export type RecordHeaders = Record<string, Uint8Array | string | (Uint8Array | string)[] | undefined>;

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
  max_retries: number;
  topic: string;
  target_url: string | null;
  source: DlqRecordSource;
  payload: string | null;
  /** Present only when the original value was not valid UTF-8; then `payload` is null. */
  payload_base64?: string;
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
  maxRetries?: number;
  targetUrl?: string | null;
  source: DlqSource;
  /** The source record's key and headers as consumed; absent when the record could not be read back. */
  key?: Uint8Array | string | null;
  headers?: RecordHeaders;
  /** The original record value (bytes as read from Kafka), or the dispatch re-serialized as text. */
  value: Uint8Array | string | null;
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
    max_retries: input.maxRetries ?? 0,
    topic: topics.dlq(input.tenant),
    target_url: input.targetUrl == null ? null : withoutUserinfo(input.targetUrl),
    source: { ...input.source, ...recordKey(input.key ?? null), headers: headerTexts(input.headers ?? {}) },
    ...dlqPayload(input.value),
  };
}

function recordKey(key: Uint8Array | string | null): Pick<DlqRecordSource, 'key' | 'key_base64'> {
  if (key === null || typeof key === 'string') return { key };
  const text = decodeUtf8(key, true);
  return text === undefined ? { key: null, key_base64: base64Encode(key) } : { key: text };
}

function headerTexts(headers: RecordHeaders): Record<string, string | string[]> {
  const text = (v: Uint8Array | string) => (typeof v === 'string' ? v : (decodeUtf8(v, true) ?? ''));
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name] = Array.isArray(value) ? value.map(text) : text(value);
  }
  return out;
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
export function withoutUserinfo(url: string): string {
  return url.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/?#@]*@/, '$1');
}

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
    max_retries: typeof o['max_retries'] === 'number' ? o['max_retries'] : 0,
    topic: o['topic'] as string,
    target_url: nullable.target_url ?? null,
    source,
    payload: nullable.payload ?? null,
    ...(typeof base64 === 'string' ? { payload_base64: base64 } : {}),
  };
}

function dlqSourceFromObject(s: JsonObject): DlqRecordSource | undefined {
  const { topic, partition, offset, timestamp, key, key_base64, headers } = s;
  if (typeof topic !== 'string' || typeof partition !== 'number' || !Number.isInteger(partition))
    return undefined;
  // Some writers emit offsets and timestamps as numbers; tools only need them as text.
  if (!isStringOrNumber(offset) || !isStringOrNumber(timestamp)) return undefined;
  // Dead letters written before key and headers were kept have neither: null and none.
  const h: Record<string, string | string[]> = {};
  if (isJsonObject(headers)) {
    for (const [name, v] of Object.entries(headers)) {
      if (typeof v === 'string') h[name] = v;
      else if (Array.isArray(v) && v.every((x) => typeof x === 'string')) h[name] = v as string[];
    }
  }
  return {
    topic,
    partition,
    offset: String(offset),
    timestamp: String(timestamp),
    key: typeof key === 'string' ? key : null,
    ...(typeof key_base64 === 'string' ? { key_base64 } : {}),
    headers: h,
  };
}

/** A dead letter's source record key, as bytes to re-publish on replay; null when it had none. */
export function dlqRecordKey(record: DlqRecord): Uint8Array | null {
  if (record.source.key !== null) return new TextEncoder().encode(record.source.key);
  if (record.source.key_base64 !== undefined) return base64Decode(record.source.key_base64) ?? null;
  return null;
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

// Buffer is not available in the workflow sandbox, so base64 is done by hand (RFC 4648, padded).
const BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

export function base64Encode(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const b0 = bytes[i] ?? 0;
    const b1 = bytes[i + 1] ?? 0;
    const b2 = bytes[i + 2] ?? 0;
    const triple = (b0 << 16) | (b1 << 8) | b2;
    out += BASE64_ALPHABET.charAt((triple >> 18) & 63) + BASE64_ALPHABET.charAt((triple >> 12) & 63);
    out += i + 1 < bytes.length ? BASE64_ALPHABET.charAt((triple >> 6) & 63) : '=';
    out += i + 2 < bytes.length ? BASE64_ALPHABET.charAt(triple & 63) : '=';
  }
  return out;
}

/** Strict padded base64 decode; undefined on any character or length outside RFC 4648. */
export function base64Decode(text: string): Uint8Array | undefined {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const out = new Uint8Array((text.length / 4) * 3 - padding);
  let o = 0;
  for (let i = 0; i < text.length; i += 4) {
    let triple = 0;
    for (let j = 0; j < 4; j++) {
      const ch = text.charAt(i + j);
      triple = (triple << 6) | (ch === '=' ? 0 : BASE64_ALPHABET.indexOf(ch));
    }
    for (const shift of [16, 8, 0]) {
      if (o < out.length) out[o++] = (triple >> shift) & 255;
    }
  }
  return out;
}
