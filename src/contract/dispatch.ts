/* eslint-disable max-lines -- contract §3 in one place, every rule next to the reason it reports */
/** Dispatch records (contract §2, §3): the validator, with a precise reason per failure, and the runs API body.
 * Pure: safe to import from workflow code. Kept whole past 300 lines because it is contract §3 in one place,
 * every rule next to the reason it reports, so it can be checked against the spec in one read. */
import {
  type JsonObject,
  codePointLength,
  decodeUtf8,
  describeUtf8Error,
  isJsonObject,
  jsonErrorDetail,
  jsonTypeName,
  truncate,
} from './json';

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

/**
 * A validated dispatch as the relay carries it: the four fields of the `POST /v1/runs` body (contract §5), with
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
 * The exact `POST /v1/runs` body: the four fields in the contract's order, `input` spliced in as its JSON text. Also the
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
/** The top-level fields contract §3 gives a meaning to; naming one of them twice makes the record ambiguous. */
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

type FieldCheck = { ok: true } | { ok: false; reason: string };
const FIELD_OK: FieldCheck = { ok: true };

/**
 * Applies every rule of contract §3 to a raw record value; the first broken rule is reported with a reason an
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
