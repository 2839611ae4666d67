/* eslint-disable max-lines -- one case per rule of contract §2-§3, in the order of the document */
import { dlqRecordId, sourceRecordDlqId } from '../../src/contract';
import {
  base64Decode,
  base64Encode,
  buildDlqRecord,
  dispatchRecordKey,
  dlqRecordPayload,
  dlqRecordKey,
  dlqRecordHeaders,
  parseDlqRecord,
  runsApiBody,
  tenantFromTopic,
  validateDispatch,
  workflowId,
  type DlqRecordInput,
  type DispatchValidation,
} from '../../src/contract';

const MAX = 1024 * 1024;
const opts = { tenant: 'acme', maxBytes: MAX };
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const validate = (value: unknown, o = opts): DispatchValidation =>
  validateDispatch(bytes(JSON.stringify(value)), o);
const base = { workflow_ref: 'onboarding@v3', input: { user: 42 }, goal_id: 'g-17', dispatch_key: 'd-0001' };
/** `base` as the relay carries it: input as its JSON text. */
const carried = {
  workflow_ref: 'onboarding@v3',
  input_json: '{"user":42}',
  goal_id: 'g-17',
  dispatch_key: 'd-0001',
};

function expectMalformed(result: DispatchValidation, reason: string | RegExp): void {
  expect(result.ok).toBe(false);
  if (result.ok) return;
  expect(result.type).toBe('malformed_dispatch');
  if (typeof reason === 'string') expect(result.reason).toBe(reason);
  else expect(result.reason).toMatch(reason);
}

describe('contract §2 topics: tenantFromTopic', () => {
  it('takes the tenant from poimen.<tenant>.dispatch', () => {
    expect(tenantFromTopic('poimen.acme.dispatch')).toBe('acme');
    expect(tenantFromTopic('poimen.a_b-9.dispatch')).toBe('a_b-9');
  });

  it('does not match the .dispatch.dlq or .events topics', () => {
    expect(tenantFromTopic('poimen.acme.dispatch.dlq')).toBeUndefined();
    expect(tenantFromTopic('poimen.acme.events')).toBeUndefined();
    expect(tenantFromTopic('other.acme.dispatch')).toBeUndefined();
  });

  it('rejects tenants outside ^[a-z0-9][a-z0-9_-]{0,62}$', () => {
    expect(tenantFromTopic('poimen.Acme.dispatch')).toBeUndefined();
    expect(tenantFromTopic('poimen.-acme.dispatch')).toBeUndefined();
    expect(tenantFromTopic('poimen..dispatch')).toBeUndefined();
    expect(tenantFromTopic('poimen.a.b.dispatch')).toBeUndefined();
  });

  it('accepts a 63-character tenant and rejects a 64-character one', () => {
    const t63 = 'a'.repeat(63);
    expect(tenantFromTopic(`poimen.${t63}.dispatch`)).toBe(t63);
    expect(tenantFromTopic(`poimen.${'a'.repeat(64)}.dispatch`)).toBeUndefined();
  });
});

describe('contract §4 workflow id and §2 record key', () => {
  it('workflow id is dispatch:<tenant>:<dispatch_key>', () => {
    expect(workflowId('acme', 'd-0001')).toBe('dispatch:acme:d-0001');
  });

  it('record key is <tenant>:<dispatch_key>', () => {
    expect(dispatchRecordKey('acme', 'd-0001')).toBe('acme:d-0001');
  });
});

describe('contract §3 dispatch message: accepted records', () => {
  it('accepts the SPEC example and returns exactly the four fields', () => {
    expect(validate(base)).toEqual({ ok: true, dispatch: carried });
  });

  it('accepts a minimal message (goal_id absent means null)', () => {
    const result = validate({ workflow_ref: 'w', input: null, dispatch_key: 'k' });
    expect(result).toEqual({
      ok: true,
      dispatch: { workflow_ref: 'w', input_json: 'null', goal_id: null, dispatch_key: 'k' },
    });
  });

  it('accepts goal_id null', () => {
    const result = validate({ ...base, goal_id: null });
    expect(result.ok && result.dispatch.goal_id).toBeNull();
  });

  it('ignores other fields', () => {
    const result = validate({ ...base, extra: 1, nested: { a: [1] } });
    expect(result).toEqual({ ok: true, dispatch: carried });
  });

  it('passes input through as any JSON value', () => {
    for (const input of [0, 'text', [1, { a: null }], true, { deep: { x: [1.5, 'y'] } }]) {
      const result = validate({ ...base, input });
      expect(result.ok && JSON.parse(result.dispatch.input_json)).toEqual(input);
    }
  });

  it('keeps input as the text the producer wrote: big integers keep every digit, number forms and spacing stay', () => {
    const text =
      '{ "workflow_ref": "w@1",\n  "input" :  {"id": 12345678901234567890123, "f": 1.0, "e": 1E2, "s": "a,b}\\"c"} ,\n' +
      '  "dispatch_key": "k" }';
    const result = validateDispatch(bytes(text), opts);
    expect(result.ok && result.dispatch.input_json).toBe(
      '{"id": 12345678901234567890123, "f": 1.0, "e": 1E2, "s": "a,b}\\"c"}',
    );
    for (const [input, json] of [
      ['"last", "x": 1', '"last"'],
      ['[1, [2, {"a": [3]}]]', '[1, [2, {"a": [3]}]]'],
      ['\t-0.5e-3\r\n', '-0.5e-3'],
    ] as const) {
      const r = validateDispatch(bytes(`{"dispatch_key":"k","workflow_ref":"w","input":${input}}`), opts);
      expect(r.ok && r.dispatch.input_json).toBe(json);
    }
  });

  it('builds the runs API body from the carried text, and from the parsed input of executions started earlier', () => {
    const result = validate(base);
    if (!result.ok) throw new Error(result.reason);
    expect(runsApiBody(result.dispatch)).toBe(JSON.stringify(base));
    expect(runsApiBody(base)).toBe(JSON.stringify(base));
    const big = validateDispatch(
      bytes('{"workflow_ref":"w","input":[9007199254740993],"dispatch_key":"k"}'),
      opts,
    );
    expect(big.ok && runsApiBody(big.dispatch)).toBe(
      '{"workflow_ref":"w","input":[9007199254740993],"goal_id":null,"dispatch_key":"k"}',
    );
  });

  it('accepts tenant_id equal to the topic tenant, and a null tenant_id', () => {
    expect(validate({ ...base, tenant_id: 'acme' })).toEqual({ ok: true, dispatch: carried });
    expect(validate({ ...base, tenant_id: null })).toEqual({ ok: true, dispatch: carried });
  });

  it('accepts a value of exactly DISPATCH_MAX_BYTES and rejects one byte more', () => {
    const ofSize = (size: number): Uint8Array => {
      const json = JSON.stringify({ ...base, pad: '' });
      return bytes(json.replace('"pad":""', `"pad":"${'x'.repeat(size - json.length)}"`));
    };
    expect(ofSize(200).byteLength).toBe(200);
    expect(validateDispatch(ofSize(200), { tenant: 'acme', maxBytes: 200 }).ok).toBe(true);
    expectMalformed(
      validateDispatch(ofSize(201), { tenant: 'acme', maxBytes: 200 }),
      'value is 201 bytes, over DISPATCH_MAX_BYTES 200',
    );
  });

  it('accepts a UTF-8 BOM before the JSON', () => {
    const withBom = new Uint8Array([0xef, 0xbb, 0xbf, ...bytes(JSON.stringify(base))]);
    expect(validateDispatch(withBom, opts)).toEqual({ ok: true, dispatch: carried });
  });

  it('accepts dispatch_key using every allowed character class', () => {
    const key = 'Az09._:@/-';
    expect(validate({ ...base, dispatch_key: key }).ok).toBe(true);
  });
});

describe('contract §3 dispatch message: malformed_dispatch', () => {
  it('tombstone (null value)', () => {
    expectMalformed(validateDispatch(null, opts), 'tombstone: record value is null');
  });

  it('too large: over DISPATCH_MAX_BYTES, checked before decoding', () => {
    const big = new Uint8Array(MAX + 1).fill(0xff);
    expectMalformed(validateDispatch(big, opts), 'value is 1048577 bytes, over DISPATCH_MAX_BYTES 1048576');
  });

  it('empty value', () => {
    expectMalformed(validateDispatch(new Uint8Array(0), opts), 'value is empty (0 bytes)');
  });

  it('not valid UTF-8', () => {
    expectMalformed(
      validateDispatch(new Uint8Array([0xff, 0xfe]), opts),
      'value is not valid UTF-8: starts with a UTF-16 LE byte order mark (FF FE)',
    );
    expectMalformed(
      validateDispatch(new Uint8Array([0x7b, 0xc3, 0x28, 0x7d]), opts),
      'value is not valid UTF-8: truncated 2-byte sequence at byte offset 1 (0x28 is not a continuation byte)',
    );
  });

  it('not valid JSON, with the parser message', () => {
    expectMalformed(validateDispatch(bytes('{"a":1,}'), opts), /^value is not valid JSON: .+/);
  });

  it.each([
    ['array', [base]],
    ['string', 'text'],
    ['number', 42],
    ['null', null],
    ['boolean', true],
  ])('not a JSON object (%s)', (name, value) => {
    expectMalformed(validate(value), `value is not a JSON object (got ${name})`);
  });

  it.each(['workflow_ref', 'input', 'dispatch_key'])('missing field %s', (field) => {
    const value: Record<string, unknown> = { ...base };
    delete value[field];
    expectMalformed(validate(value), `missing field ${field}`);
  });

  it.each([
    ['workflow_ref', 42, 'number'],
    ['workflow_ref', null, 'null'],
    ['workflow_ref', ['w'], 'array'],
    ['dispatch_key', 1, 'number'],
    ['dispatch_key', { k: 1 }, 'object'],
    ['dispatch_key', false, 'boolean'],
  ])('field %s must be a string (got %p)', (field, value, name) => {
    expectMalformed(validate({ ...base, [field]: value }), `field ${field} must be a string (got ${name})`);
  });

  it.each([
    [42, 'number'],
    [{}, 'object'],
    [[], 'array'],
    [true, 'boolean'],
  ])('field goal_id must be a string or null (got %p)', (value, name) => {
    expectMalformed(
      validate({ ...base, goal_id: value }),
      `field goal_id must be a string or null (got ${name})`,
    );
  });

  it('workflow_ref: 512 characters ok, 513 rejected, empty rejected', () => {
    expect(validate({ ...base, workflow_ref: 'w'.repeat(512) }).ok).toBe(true);
    expectMalformed(
      validate({ ...base, workflow_ref: 'w'.repeat(513) }),
      'field workflow_ref has 513 characters, maximum 512',
    );
    expectMalformed(
      validate({ ...base, workflow_ref: '' }),
      'field workflow_ref is empty, minimum 1 character',
    );
  });

  it('dispatch_key: 256 characters ok, 257 rejected, empty rejected', () => {
    expect(validate({ ...base, dispatch_key: 'k'.repeat(256) }).ok).toBe(true);
    expectMalformed(
      validate({ ...base, dispatch_key: 'k'.repeat(257) }),
      'field dispatch_key has 257 characters, maximum 256',
    );
    expectMalformed(validate({ ...base, dispatch_key: 'k'.repeat(300) }), /has 300 characters, maximum 256$/);
    expectMalformed(
      validate({ ...base, dispatch_key: '' }),
      'field dispatch_key is empty, minimum 1 character',
    );
  });

  it('characters are counted as code points: an emoji is one character', () => {
    const emoji = '😀'; // two UTF-16 units
    expect(validate({ ...base, workflow_ref: emoji.repeat(512) }).ok).toBe(true);
    expectMalformed(
      validate({ ...base, workflow_ref: emoji.repeat(513) }),
      'field workflow_ref has 513 characters, maximum 512',
    );
    expectMalformed(
      validate({ ...base, dispatch_key: emoji.repeat(257) }),
      'field dispatch_key has 257 characters, maximum 256',
    );
  });

  it.each(['a b', 'a#b', 'ключ', 'k😀', 'a\nb', 'a+b'])(
    'dispatch_key %p contains characters outside [A-Za-z0-9._:@/-]',
    (key) => {
      expectMalformed(
        validate({ ...base, dispatch_key: key }),
        /^field dispatch_key contains characters outside \[A-Za-z0-9._:@\/-\]/,
      );
    },
  );

  it('names the first bad dispatch_key character and its position', () => {
    expectMalformed(
      validate({ ...base, dispatch_key: 'k😀x y' }),
      'field dispatch_key contains characters outside [A-Za-z0-9._:@/-] (first: "😀" at character 2)',
    );
  });

  it('carries the dispatch_key when that field is valid, and not otherwise', () => {
    const badRef = validate({ ...base, workflow_ref: 1 });
    expect(!badRef.ok && badRef.dispatchKey).toBe('d-0001');
    const badKey = validate({ ...base, dispatch_key: 'a b' });
    expect(!badKey.ok && 'dispatchKey' in badKey).toBe(false);
  });

  it('reads fields as own properties only (no prototype lookups)', () => {
    const value = bytes('{"__proto__":{"workflow_ref":"w"},"input":1,"dispatch_key":"k"}');
    expectMalformed(validateDispatch(value, opts), 'missing field workflow_ref');
  });
});

describe('contract §3 dispatch message: tenant_mismatch', () => {
  it('tenant_id different from the topic tenant', () => {
    const result = validate({ ...base, tenant_id: 'other' });
    expect(result).toEqual({
      ok: false,
      type: 'tenant_mismatch',
      reason: 'tenant_id "other" does not match the topic\'s tenant "acme"',
      dispatchKey: 'd-0001',
    });
  });

  it('tenant_id of another JSON type is a mismatch too', () => {
    const result = validate({ ...base, tenant_id: 42 });
    expect(!result.ok && result.type).toBe('tenant_mismatch');
    expect(!result.ok && result.reason).toBe('tenant_id 42 does not match the topic\'s tenant "acme"');
  });

  it('a malformed record is reported as malformed even when its tenant_id also mismatches', () => {
    expectMalformed(validate({ ...base, tenant_id: 'other', dispatch_key: '' }), /dispatch_key is empty/);
  });
});

describe('contract §6 dead-letter record', () => {
  const source = { topic: 'poimen.acme.dispatch', partition: 3, offset: '42', timestamp: '1700000000000' };
  const failure: DlqRecordInput = {
    id: '1b4e28ba-2fa1-11d2-883f-0016d3cca427',
    timestamp: Date.UTC(2024, 0, 2, 3, 4, 5, 6),
    type: 'dispatch_failure',
    tenant: 'acme',
    dispatchKey: 'd-0001',
    runId: 'run-abc',
    error: 'runs API answered 503: busy',
    httpStatus: 503,
    retryCount: 10,
    maxRetries: 10,
    targetUrl: 'http://api.local:8080/v1/runs',
    source,
    value: bytes(JSON.stringify(base)),
  };

  it('dispatch_failure: every SPEC field, payload as UTF-8 text', () => {
    expect(buildDlqRecord(failure)).toEqual({
      id: failure.id,
      type: 'dispatch_failure',
      tenant_id: 'acme',
      dispatch_key: 'd-0001',
      workflow_id: 'dispatch:acme:d-0001',
      run_id: 'run-abc',
      error: 'runs API answered 503: busy',
      http_status: 503,
      timestamp: '2024-01-02T03:04:05.006Z',
      retry_count: 10,
      max_retries: 10,
      topic: 'poimen.acme.dispatch.dlq',
      target_url: 'http://api.local:8080/v1/runs',
      // Without the record's key and headers (not read back): none, not invented.
      source: { ...source, key: null, headers: {} },
      payload: JSON.stringify(base),
    });
  });

  it('keeps the source record’s key and headers as text: a non-UTF-8 key as base64, a repeated header in order', () => {
    const withKey = buildDlqRecord({
      ...failure,
      key: Buffer.from('acme:d-0001'),
      headers: { traceparent: Buffer.from('00-ab-cd-01'), 'x-tag': [Buffer.from('a'), 'b'], gone: undefined },
    });
    expect(withKey.source).toEqual({
      ...source,
      key: 'acme:d-0001',
      headers: { traceparent: '00-ab-cd-01', 'x-tag': ['a', 'b'] },
    });
    const binary = buildDlqRecord({ ...failure, key: new Uint8Array([0xff, 0x00, 0x80]) });
    expect(binary.source).toMatchObject({ key: null, key_base64: '/wCA' });
    // And back, as `dlq replay` reads it.
    const parsed = parseDlqRecord(JSON.stringify(binary))!;
    expect(Buffer.from(dlqRecordKey(parsed)!)).toEqual(Buffer.from([0xff, 0x00, 0x80]));
    expect(parseDlqRecord(JSON.stringify(withKey))!.source).toEqual(withKey.source);
  });

  it('keeps header values that are not UTF-8 as bytes: replay gets every header back byte for byte, in order', () => {
    const headers = {
      first: 'a',
      sig: Buffer.from([0xff, 0x00, 0x80]),
      empty: Buffer.alloc(0),
      mixed: [Buffer.from('ok'), Buffer.from([0xc3, 0x28])],
      last: Buffer.from('z'),
    };
    const record = buildDlqRecord({ ...failure, headers });
    // Text readers see every name, in order; the bytes of those not UTF-8 are in headers_base64.
    expect(record.source.headers).toEqual({ first: 'a', sig: '', empty: '', mixed: ['', ''], last: 'z' });
    expect(record.source.headers_base64).toEqual({ sig: '/wCA', mixed: ['b2s=', 'wyg='] });
    const parsed = parseDlqRecord(JSON.stringify(record))!;
    const back = dlqRecordHeaders(parsed);
    expect(Object.keys(back)).toEqual(Object.keys(headers));
    const hex = (v: Uint8Array) => Buffer.from(v).toString('hex');
    expect(
      Object.fromEntries(Object.entries(back).map(([k, v]) => [k, Array.isArray(v) ? v.map(hex) : hex(v)])),
    ).toEqual({ first: '61', sig: 'ff0080', empty: '', mixed: ['6f6b', 'c328'], last: '7a' });
  });

  it('leaves credential headers out (any case, text or bytes), and names them in headers_omitted', () => {
    const record = buildDlqRecord({
      ...failure,
      headers: {
        traceparent: '00-ab-cd-01',
        Authorization: 'Bearer s3cret-a',
        'proxy-authorization': Buffer.from([0xff, 0x01]),
        cookie: ['a=s3cret-b', 'b=s3cret-c'],
        'Set-Cookie': 's3cret-d',
        'x-api-key': 's3cret-e',
        'x-auth-token': 's3cret-f',
        'x-origin': 'billing',
      },
    });
    expect(record.source.headers).toEqual({ traceparent: '00-ab-cd-01', 'x-origin': 'billing' });
    expect(record.source.headers_base64).toBeUndefined();
    expect(record.source.headers_omitted).toEqual([
      'Authorization',
      'proxy-authorization',
      'cookie',
      'Set-Cookie',
      'x-api-key',
      'x-auth-token',
    ]);
    expect(JSON.stringify(record)).not.toMatch(/s3cret|\/wE=/);
    // A dead letter written with one (by an earlier version): tools never show it, replay never re-publishes it.
    const old = {
      ...record,
      source: { ...record.source, headers: { authorization: 'Bearer s3cret', a: 'x' } },
    };
    const parsed = parseDlqRecord(JSON.stringify(old))!;
    expect(parsed.source.headers).toEqual({ a: 'x' });
    expect(Object.keys(dlqRecordHeaders(parsed))).toEqual(['a']);
  });

  it('reads dead letters written before headers_base64, and ignores a headers_base64 that is not base64', () => {
    const old = buildDlqRecord({ ...failure, headers: { a: 'x', b: ['y', 'z'] } });
    const { headers_base64: _none, ...oldSource } = old.source;
    const parsedOld = parseDlqRecord(JSON.stringify({ ...old, source: oldSource }))!;
    expect(dlqRecordHeaders(parsedOld)).toEqual({
      a: Buffer.from('x'),
      b: [Buffer.from('y'), Buffer.from('z')],
    });
    const bad = {
      ...old,
      source: { ...oldSource, headers: { a: '' }, headers_base64: { a: 'not base64!' } },
    };
    expect(dlqRecordHeaders(parseDlqRecord(JSON.stringify(bad))!)).toEqual({ a: Buffer.alloc(0) });
  });

  it('malformed_dispatch with non-UTF-8 bytes: payload null, payload_base64 of the exact bytes', () => {
    const raw = new Uint8Array([0xff, 0xfe, 0x00, 0x7b, 0x80]);
    const record = buildDlqRecord({
      id: 'x',
      timestamp: new Date('2024-01-01T00:00:00Z'),
      type: 'malformed_dispatch',
      tenant: 'acme',
      dispatchKey: null,
      error: 'value is not valid UTF-8',
      source,
      value: raw,
    });
    expect(record.payload).toBeNull();
    expect(record.payload_base64).toBe(Buffer.from(raw).toString('base64'));
    expect(record).toMatchObject({
      dispatch_key: null,
      workflow_id: null,
      run_id: null,
      http_status: null,
      retry_count: 0,
      max_retries: 0,
      target_url: null,
      topic: 'poimen.acme.dispatch.dlq',
    });
  });

  it('UTF-8 payload has no payload_base64 field', () => {
    expect('payload_base64' in buildDlqRecord(failure)).toBe(false);
  });

  it('tombstone: payload null and no payload_base64', () => {
    const record = buildDlqRecord({ ...failure, type: 'malformed_dispatch', value: null });
    expect(record.payload).toBeNull();
    expect('payload_base64' in record).toBe(false);
  });

  it('records rejected at ingest have no workflow_id even when dispatch_key is known', () => {
    const record = buildDlqRecord({ ...failure, type: 'tenant_mismatch' });
    expect(record.dispatch_key).toBe('d-0001');
    expect(record.workflow_id).toBeNull();
  });

  it('keeps a BOM so the payload round-trips to the original bytes', () => {
    const raw = new Uint8Array([0xef, 0xbb, 0xbf, ...bytes('{}')]);
    const record = buildDlqRecord({ ...failure, value: raw });
    expect(dlqRecordPayload(record)).toEqual(raw);
  });

  it('never carries URL credentials in target_url', () => {
    const record = buildDlqRecord({ ...failure, targetUrl: 'https://user:s3cret@api.local/v1/runs' });
    expect(record.target_url).toBe('https://api.local/v1/runs');
    expect(JSON.stringify(record)).not.toContain('s3cret');
  });

  it('parseDlqRecord reads back what buildDlqRecord wrote (text and base64 payloads)', () => {
    const text = buildDlqRecord(failure);
    expect(parseDlqRecord(bytes(JSON.stringify(text)))).toEqual(text);
    const binary = buildDlqRecord({ ...failure, value: new Uint8Array([0xff, 0x00]) });
    const parsed = parseDlqRecord(JSON.stringify(binary));
    expect(parsed).toEqual(binary);
    expect(parsed && dlqRecordPayload(parsed)).toEqual(new Uint8Array([0xff, 0x00]));
  });

  it('parseDlqRecord defaults missing optional fields and normalizes numeric offsets', () => {
    const parsed = parseDlqRecord(
      JSON.stringify({
        id: 'i',
        type: 'malformed_dispatch',
        tenant_id: 'acme',
        error: 'e',
        timestamp: 't',
        topic: 'poimen.acme.dispatch.dlq',
        source: { topic: 'poimen.acme.dispatch', partition: 0, offset: 7, timestamp: 1 },
      }),
    );
    expect(parsed).toMatchObject({
      dispatch_key: null,
      workflow_id: null,
      run_id: null,
      http_status: null,
      retry_count: 0,
      max_retries: 0,
      target_url: null,
      payload: null,
      source: { offset: '7', timestamp: '1' },
    });
  });

  it.each([
    ['null value', null],
    ['not JSON', 'nope'],
    ['not UTF-8', new Uint8Array([0xff])],
    ['array', '[]'],
    ['unknown type', JSON.stringify({ ...buildDlqRecord(failure), type: 'other' })],
    ['missing id', JSON.stringify({ ...buildDlqRecord(failure), id: undefined })],
    ['bad source', JSON.stringify({ ...buildDlqRecord(failure), source: { topic: 't' } })],
    ['wrong http_status type', JSON.stringify({ ...buildDlqRecord(failure), http_status: '503' })],
  ])('parseDlqRecord rejects %s', (_name, value) => {
    expect(parseDlqRecord(value)).toBeUndefined();
  });
});

describe('contract §6 dead-letter record ids', () => {
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

  it('are UUIDs derived from what they are about: a repeated write after a crash repeats the id', () => {
    const id = dlqRecordId('poimen.acme.dispatch/3/42');
    expect(id).toMatch(UUID);
    expect(dlqRecordId('poimen.acme.dispatch/3/42')).toBe(id);
  });

  it('differ for different source records or executions', () => {
    const ids = new Set(
      [
        'poimen.acme.dispatch/3/42',
        'poimen.acme.dispatch/3/43',
        'poimen.acme.dispatch/4/42',
        'dispatch:acme:d/run',
      ].map(dlqRecordId),
    );
    expect(ids.size).toBe(4);
  });
});

describe('contract §6 ids of records rejected at ingest', () => {
  const at = { topic: 'poimen.acme.dispatch', partition: 3, offset: '42', timestamp: '1700000000000' };
  const id = sourceRecordDlqId(at, Buffer.from('k'), Buffer.from('v'));

  it('repeat for the same record (a redelivery), whatever form its bytes come in', () => {
    expect(sourceRecordDlqId({ ...at }, 'k', 'v')).toBe(id);
  });

  it('differ for another record at the same coordinates, or the same bytes elsewhere', () => {
    const others = [
      sourceRecordDlqId({ ...at, timestamp: '1700000000001' }, 'k', 'v'),
      sourceRecordDlqId(at, 'k', 'w'),
      sourceRecordDlqId(at, 'kv', ''),
      sourceRecordDlqId(at, null, 'v'),
      sourceRecordDlqId(at, 'k', null),
      sourceRecordDlqId(at, 'k', ''),
      sourceRecordDlqId({ ...at, offset: '43' }, 'k', 'v'),
      sourceRecordDlqId({ ...at, partition: 4 }, 'k', 'v'),
    ];
    expect(new Set([id, ...others]).size).toBe(others.length + 1);
  });
});

describe('base64 (no Buffer in the workflow sandbox)', () => {
  it('matches Buffer for every length mod 3 and every byte value', () => {
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    for (let n = 0; n <= 7; n++) {
      const slice = all.subarray(250 - n, 250);
      expect(base64Encode(slice)).toBe(Buffer.from(slice).toString('base64'));
      expect(base64Decode(base64Encode(slice))).toEqual(new Uint8Array(slice));
    }
    expect(base64Encode(all)).toBe(Buffer.from(all).toString('base64'));
    expect(base64Decode(Buffer.from(all).toString('base64'))).toEqual(all);
  });

  it('rejects invalid base64', () => {
    expect(base64Decode('abc')).toBeUndefined();
    expect(base64Decode('ab=c')).toBeUndefined();
    expect(base64Decode('a*cd')).toBeUndefined();
  });

  it('decodes a dead letter payload of megabytes (the check must not recurse per character group)', () => {
    const bytes = new Uint8Array(8 * 1024 * 1024).map((_, i) => (i * 31) & 255);
    const decoded = base64Decode(Buffer.from(bytes).toString('base64'));
    expect(decoded?.length).toBe(bytes.length);
    expect(Buffer.from(decoded!).equals(Buffer.from(bytes))).toBe(true);
  });
});
