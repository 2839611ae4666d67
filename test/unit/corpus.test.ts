/* eslint-disable max-lines -- one case per entry of the malformed corpus and its reason */
/**
 * The bad-input corpus against the validator, and property-based fuzzing (fast-check) of validateDispatch and
 * the dead-letter record built from its verdict.
 */
import fc from 'fast-check';
import {
  DISPATCH_KEY_MAX_CHARS,
  INPUT_MAX_DEPTH,
  WORKFLOW_REF_MAX_CHARS,
  buildDlqRecord,
  dlqRecordPayload,
  parseDlqRecord,
  runsApiBody,
  validTraceparent,
  validateDispatch,
  type DispatchValidation,
} from '../../src/contract';
import { CORPUS_MAX_BYTES, hostileValidCorpus, malformedCorpus } from '../fixtures/malformed-corpus';

const TENANT = 'acme';
const opts = { tenant: TENANT, maxBytes: CORPUS_MAX_BYTES };
const encode = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));

describe('bad-input corpus: every malformed record gets its precise reason', () => {
  const corpus = malformedCorpus(TENANT);

  it('has at least 50 distinct malformed records', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(50);
    expect(new Set(corpus.map((c) => c.name)).size).toBe(corpus.length);
    const values = corpus.map((c) => (c.value === null ? 'null' : c.value.toString('base64')));
    expect(new Set(values).size).toBe(corpus.length);
  });

  it('the reasons are specific: records share a reason only when they show the same fault', () => {
    // The one fault reached two ways each; any other pair of records with one reason means a reason is vague.
    const sameFault = [
      ['input nested 100 000 arrays deep', 'input nested 513 objects deep'],
      ['fields only on __proto__', 'workflow_ref missing'],
      ['dispatch_key with a space', 'invalid dispatch_key under a record key that looks right'],
      [
        'tenant_id of another tenant',
        'tenant_id of another tenant, backed by a record key and x-tenant-id header',
      ],
    ];
    const byReason = new Map<string, string[]>();
    for (const c of corpus) {
      const v = validateDispatch(c.value, opts);
      const reason = v.ok ? 'accepted' : v.reason;
      byReason.set(reason, [...(byReason.get(reason) ?? []), c.name]);
    }
    const shared = [...byReason.values()].filter((names) => names.length > 1);
    const sorted = (groups: string[][]) => groups.map((g) => [...g].sort()).sort();
    expect(sorted(shared)).toEqual(sorted(sameFault));
  });

  it.each(malformedCorpus(TENANT).map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const verdict = validateDispatch(c.value, opts);
    expect(verdict).toMatchObject({
      ok: false,
      type: c.expectType,
      reason: expect.stringMatching(c.expectReason),
    });
    expect(!verdict.ok && (verdict.dispatchKey ?? null)).toBe(c.expectDispatchKey);
  });
});

describe('hostile but valid records are accepted under the value’s dispatch_key', () => {
  it.each(hostileValidCorpus(TENANT).map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const verdict = validateDispatch(c.value, opts);
    expect(verdict.ok && verdict.dispatch.dispatch_key).toBe(c.dispatchKey);
  });

  it('input at exactly INPUT_MAX_DEPTH (arrays or objects) is accepted, one level more is not', () => {
    const record = (input: string) =>
      new TextEncoder().encode(`{"workflow_ref":"w","dispatch_key":"k","input":${input}}`);
    const arrays = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    const objects = (n: number) => `${'{"a":'.repeat(n - 1)}{}${'}'.repeat(n - 1)}`;
    for (const nest of [arrays, objects]) {
      expect(validateDispatch(record(nest(INPUT_MAX_DEPTH)), opts).ok).toBe(true);
      expect(validateDispatch(record(nest(INPUT_MAX_DEPTH + 1)), opts)).toMatchObject({
        ok: false,
        reason: `field input nests arrays/objects more than ${INPUT_MAX_DEPTH} levels deep`,
      });
    }
  });

  it('nesting far past any stack (100 000 levels) gets a reason, not a RangeError: the depth walk is iterative', () => {
    // Speed is the benchmarks' business; what a unit test can pin is that depth never recurses on the stack.
    const record = (input: string) =>
      new TextEncoder().encode(`{"workflow_ref":"w","dispatch_key":"k","input":${input}}`);
    const n = 100_000;
    for (const input of [
      `${'['.repeat(n)}${']'.repeat(n)}`,
      `${'{"a":'.repeat(n - 1)}{}${'}'.repeat(n - 1)}`,
    ]) {
      expect(validateDispatch(record(input), { ...opts, maxBytes: 10 * n })).toMatchObject({
        ok: false,
        reason: `field input nests arrays/objects more than ${INPUT_MAX_DEPTH} levels deep`,
      });
    }
  });

  it('depth and number checks look only at input: strings and other fields do not count', () => {
    const text = `{"workflow_ref":"w","dispatch_key":"k","input":"${'['.repeat(600)} 1e400","other":${'['.repeat(600)}${']'.repeat(600)},"big":1e400}`;
    expect(validateDispatch(new TextEncoder().encode(text), opts).ok).toBe(true);
  });
});

describe('W3C traceparent: only valid trace context is forwarded', () => {
  const tid = '4bf92f3577b34da6a3ce929d0e0e4736';
  const pid = '00f067aa0ba902b7';

  it.each([
    [`00-${tid}-${pid}-01`, `00-${tid}-${pid}-01`],
    [`00-${tid}-${pid}-00`, `00-${tid}-${pid}-00`],
    [` 00-${tid}-${pid}-01 `, `00-${tid}-${pid}-01`],
    [`cc-${tid}-${pid}-01-extra`, `00-${tid}-${pid}-01`],
    [`01-${tid}-${pid}-01`, `00-${tid}-${pid}-01`],
  ])('%p is forwarded as %p', (header, forwarded) => {
    expect(validTraceparent(header)).toBe(forwarded);
  });

  it.each([
    ['absent', undefined],
    ['garbage', 'not-a-trace'],
    ['version ff', `ff-${tid}-${pid}-01`],
    ['all-zero trace id', `00-${'0'.repeat(32)}-${pid}-01`],
    ['all-zero parent id', `00-${tid}-${'0'.repeat(16)}-01`],
    ['upper case', `00-${tid.toUpperCase()}-${pid}-01`],
    ['version 00 with an extra field', `00-${tid}-${pid}-01-extra`],
    ['header injection', `00-${tid}-${pid}-01\r\nx-evil: 1`],
    ['short trace id', `00-${tid.slice(1)}-${pid}-01`],
    ['huge', `00-${tid}-${pid}-01-${'x'.repeat(10_000)}`],
  ])('%s is dropped', (_name, header) => {
    expect(validTraceparent(header)).toBeUndefined();
  });

  it('never throws and only ever forwards a strict version-00 header', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.stringMatching(/^[0-9a-f-]{50,60}$/)), (header) => {
        const out = validTraceparent(header);
        return out === undefined || /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/.test(out);
      }),
    );
  });
});

// ---------------------------------------------------------------------------------------------------------
// Property-based fuzzing of the validator
// ---------------------------------------------------------------------------------------------------------

const KEY_CHARS = 'ABCXYZabcxyz0189._:@/-'.split('');
const validKey = fc
  .array(fc.constantFrom(...KEY_CHARS), { minLength: 1, maxLength: DISPATCH_KEY_MAX_CHARS })
  .map((chars) => chars.join(''));
const validRef = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }).filter((s) => s.length > 0);
const validGoal = fc.option(fc.string({ unit: 'grapheme', maxLength: 40 }), { nil: null });
const anyJson = fc.jsonValue({ maxDepth: 4 });

/** Field values a producer might send: valid ones, near misses and wrong types. */
const fieldValue = fc.oneof(
  anyJson,
  validKey,
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('', ' ', 'a b', 'ключ', '\ud800', 'k'.repeat(257), 'w'.repeat(513), TENANT, 'ACME', null),
);

/** An independent reading of contract §3, to compare the validator against. */
function specVerdict(o: Record<string, unknown>): 'ok' | 'malformed_dispatch' | 'tenant_mismatch' {
  const has = (f: string) => Object.hasOwn(o, f);
  const chars = (s: string) => [...s].length;
  const wellFormed = (s: string) => !/[\ud800-\udfff]/.test(s.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''));
  const ref = o['workflow_ref'];
  const key = o['dispatch_key'];
  const goal = o['goal_id'];
  const rules = [
    typeof ref === 'string' && chars(ref) >= 1 && chars(ref) <= WORKFLOW_REF_MAX_CHARS && wellFormed(ref),
    has('input'),
    !has('goal_id') || goal === null || (typeof goal === 'string' && wellFormed(goal)),
    typeof key === 'string' && chars(key) <= DISPATCH_KEY_MAX_CHARS && /^[A-Za-z0-9._:@/-]+$/.test(key),
  ];
  if (!rules.every(Boolean)) return 'malformed_dispatch';
  const tenantId = o['tenant_id'];
  return !has('tenant_id') || tenantId === null || tenantId === TENANT ? 'ok' : 'tenant_mismatch';
}

const candidate = fc.record(
  {
    workflow_ref: fc.oneof(validRef, fieldValue),
    input: anyJson,
    goal_id: fc.oneof(validGoal, fieldValue),
    dispatch_key: fc.oneof(validKey, fieldValue),
    tenant_id: fc.oneof(fc.constant(TENANT), fieldValue),
    extra: anyJson,
  },
  { requiredKeys: [] },
);

function outcome(v: DispatchValidation): string {
  return v.ok ? 'ok' : v.type;
}

describe('validateDispatch properties (fast-check)', () => {
  it('never throws, whatever the bytes', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 3000 }),
        fc.integer({ min: 1, max: 4000 }),
        (bytes, maxBytes) => {
          const v = validateDispatch(bytes, { tenant: TENANT, maxBytes });
          return v.ok || (v.reason.length > 0 && v.type === 'malformed_dispatch');
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('never throws on any text, nor on any JSON value', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'binary' }),
          fc.jsonValue().map((v) => JSON.stringify(v)),
          candidate.map((c) => JSON.stringify(c)),
        ),
        (text) => {
          const v = validateDispatch(new TextEncoder().encode(text), opts);
          return v.ok || v.reason.length > 0;
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('accepts exactly the records contract §3 accepts, and tells tenant_mismatch from malformed', () => {
    fc.assert(
      fc.property(candidate, (record) => {
        expect(outcome(validateDispatch(encode(record), opts))).toBe(specVerdict(record));
      }),
      { numRuns: 3000 },
    );
  });

  it('accepted records round-trip the four fields (input unchanged in meaning, however the record is spaced)', () => {
    fc.assert(
      fc.property(
        fc.record({ workflow_ref: validRef, input: anyJson, goal_id: validGoal, dispatch_key: validKey }),
        fc.dictionary(
          fc
            .string()
            .filter(
              (k) =>
                !['workflow_ref', 'input', 'goal_id', 'dispatch_key', 'tenant_id', '__proto__'].includes(k),
            ),
          anyJson,
        ),
        fc.constantFrom(undefined, 2, '\t', ' \r\n '),
        (dispatch, extra, space) => {
          const text = JSON.stringify({ ...extra, ...dispatch }, null, space);
          const v = validateDispatch(new TextEncoder().encode(text), opts);
          expect(v.ok).toBe(true);
          if (!v.ok) return;
          expect(Object.keys(v.dispatch).sort()).toEqual([
            'dispatch_key',
            'goal_id',
            'input_json',
            'workflow_ref',
          ]);
          // The carried text is the record's own, and means the same value.
          expect(text).toContain(v.dispatch.input_json);
          expect(JSON.stringify(JSON.parse(v.dispatch.input_json))).toBe(JSON.stringify(dispatch.input));
          const { workflow_ref, input, goal_id, dispatch_key } = dispatch;
          expect(JSON.stringify(JSON.parse(runsApiBody(v.dispatch)))).toBe(
            JSON.stringify({ workflow_ref, input, goal_id, dispatch_key }),
          );
          expect(v.dispatch).toMatchObject({
            workflow_ref: dispatch.workflow_ref,
            goal_id: dispatch.goal_id,
            dispatch_key: dispatch.dispatch_key,
          });
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('every rejection makes a DLQ record that parses back and preserves the original bytes', () => {
    const source = { topic: 'poimen.acme.dispatch', partition: 0, offset: '7', timestamp: '1700000000000' };
    fc.assert(
      fc.property(
        fc.oneof(
          fc.constant(null),
          fc.uint8Array({ maxLength: 500 }),
          fc.string({ unit: 'binary' }).map((s) => new TextEncoder().encode(s)),
          candidate.map(encode),
        ),
        (value) => {
          const v = validateDispatch(value, opts);
          if (v.ok) return;
          const record = buildDlqRecord({
            id: 'id-1',
            timestamp: 0,
            type: v.type,
            tenant: TENANT,
            dispatchKey: v.dispatchKey ?? null,
            error: v.reason,
            source,
            value,
          });
          const parsed = parseDlqRecord(new TextEncoder().encode(JSON.stringify(record)));
          expect(parsed).toEqual(record);
          const payload = dlqRecordPayload(parsed!);
          if (value === null) expect(payload).toBeNull();
          else expect(Buffer.from(payload!).equals(Buffer.from(value))).toBe(true);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
