import {
  bodyExcerpt,
  classifyRunsApiAnswer,
  parseRetryAfter,
  type Classification,
} from '../../src/activities/classify';

const NOW = Date.UTC(2024, 0, 15, 12, 0, 0);

function respond(
  status: number,
  body = '',
  headers: Record<string, string | string[] | undefined> = {},
): Classification {
  return classifyRunsApiAnswer({ kind: 'response', status, headers, body, nowMs: NOW });
}

describe('contract §5: 200, 201, 202 are success', () => {
  it.each([200, 201, 202])('%i with a JSON run_id: admission created, run_id read', (status) => {
    expect(respond(status, '{"run_id":"r-1","other":1}')).toEqual({
      outcome: 'success',
      admission: 'created',
      runId: 'r-1',
    });
  });

  it.each([
    ['empty body', ''],
    ['non-JSON body', 'accepted'],
    ['JSON without run_id', '{"id":"x"}'],
    ['non-string run_id', '{"run_id":42}'],
    ['JSON array', '[{"run_id":"r"}]'],
    ['JSON null', 'null'],
  ])('%s: still success, run_id null', (_name, body) => {
    expect(respond(201, body)).toEqual({ outcome: 'success', admission: 'created', runId: null });
  });
});

describe('contract §5: 409 is success with admission existing', () => {
  it('reads run_id from the body when present', () => {
    expect(respond(409, '{"run_id":"r-9"}')).toEqual({
      outcome: 'success',
      admission: 'existing',
      runId: 'r-9',
    });
  });

  it('run_id null when the body has none', () => {
    expect(respond(409, 'conflict')).toEqual({ outcome: 'success', admission: 'existing', runId: null });
  });
});

describe('contract §5: 408, 425, 429, 5xx are retryable', () => {
  it.each([408, 425, 429, 500, 502, 503, 504, 599])('%i is retryable with its status', (status) => {
    expect(respond(status, 'upstream busy')).toEqual({
      outcome: 'retryable',
      reason: `runs API answered ${status}: upstream busy`,
      httpStatus: status,
    });
  });

  it('Retry-After in seconds sets the next delay', () => {
    expect(respond(503, '', { 'retry-after': '7' })).toMatchObject({
      outcome: 'retryable',
      retryAfterMs: 7000,
    });
  });

  it('Retry-After as an HTTP date sets the next delay', () => {
    const result = respond(429, '', { 'Retry-After': 'Mon, 15 Jan 2024 12:00:30 GMT' });
    expect(result).toMatchObject({ outcome: 'retryable', httpStatus: 429, retryAfterMs: 30_000 });
  });

  it('Retry-After given twice: the first value counts', () => {
    expect(respond(503, '', { 'retry-after': ['3', '9'] })).toMatchObject({ retryAfterMs: 3000 });
  });

  it('an invalid Retry-After leaves the delay to the retry policy', () => {
    const result = respond(503, '', { 'retry-after': 'soon' });
    expect(result.outcome).toBe('retryable');
    expect('retryAfterMs' in result).toBe(false);
  });
});

describe('contract §5: 401, 403 are retryable (credentials are fixed by operators)', () => {
  it.each([401, 403])('%i', (status) => {
    expect(respond(status, 'denied')).toEqual({
      outcome: 'retryable',
      reason: `runs API answered ${status}: denied`,
      httpStatus: status,
    });
  });
});

describe('contract §5: any other 4xx is non-retryable', () => {
  it.each([400, 404, 405, 410, 413, 415, 422, 451, 499])('%i is fatal', (status) => {
    expect(respond(status, '{"error":"bad workflow_ref"}')).toEqual({
      outcome: 'fatal',
      reason: `runs API answered ${status}: {"error":"bad workflow_ref"}`,
      httpStatus: status,
    });
  });

  it('ignores Retry-After on a fatal answer', () => {
    expect(respond(400, '', { 'retry-after': '5' })).toEqual({
      outcome: 'fatal',
      reason: 'runs API answered 400',
      httpStatus: 400,
    });
  });
});

describe('statuses outside the contract §5 table are fatal (redirects are not followed)', () => {
  it.each([100, 204, 301, 302, 304, 307, 308, 600])('%i is fatal as an unexpected status', (status) => {
    const result = respond(status);
    expect(result).toEqual({
      outcome: 'fatal',
      reason: `runs API answered ${status} (unexpected status)`,
      httpStatus: status,
    });
  });

  it('a redirect names its location', () => {
    expect(respond(301, 'moved', { location: 'https://api.example/v1/runs' })).toMatchObject({
      reason: 'runs API answered 301 (unexpected status, location https://api.example/v1/runs): moved',
    });
  });
});

describe('contract §5: connect, reset and timeout errors are retryable (classified by code)', () => {
  it.each([
    'UND_ERR_CONNECT_TIMEOUT',
    'UND_ERR_HEADERS_TIMEOUT',
    'UND_ERR_BODY_TIMEOUT',
    'UND_ERR_SOCKET',
    'UND_ERR_CLOSED',
    'UND_ERR_ABORTED',
    'ABORT_ERR',
    'AbortError',
    'TimeoutError',
    'ECONNREFUSED',
    'ECONNRESET',
    'EPIPE',
    'ETIMEDOUT',
    'EAI_AGAIN',
    'ENOTFOUND',
    'EHOSTUNREACH',
    'ENETUNREACH',
  ])('%s', (code) => {
    const result = classifyRunsApiAnswer({ kind: 'error', code });
    expect(result).toMatchObject({ outcome: 'retryable', httpStatus: null });
    expect(result.outcome === 'retryable' && result.reason).toMatch(
      new RegExp(`^runs API request failed: ${code} \\(.+\\)$`),
    );
  });

  it('an unknown code is retryable: a transport problem is never the dispatch’s fault', () => {
    expect(classifyRunsApiAnswer({ kind: 'error', code: 'ERR_SOMETHING_NEW' })).toEqual({
      outcome: 'retryable',
      reason: 'runs API request failed: ERR_SOMETHING_NEW',
      httpStatus: null,
    });
  });

  it('an error without a code is retryable', () => {
    expect(classifyRunsApiAnswer({ kind: 'error', code: undefined })).toEqual({
      outcome: 'retryable',
      reason: 'runs API request failed: no error code',
      httpStatus: null,
    });
  });

  it('codes that look like Object.prototype members are not mistaken for known codes', () => {
    expect(classifyRunsApiAnswer({ kind: 'error', code: 'toString' })).toMatchObject({
      reason: 'runs API request failed: toString',
    });
  });
});

describe('Retry-After forms (seconds or HTTP date)', () => {
  it('delta-seconds', () => {
    expect(parseRetryAfter('0', NOW)).toBe(0);
    expect(parseRetryAfter('120', NOW)).toBe(120_000);
    expect(parseRetryAfter(' 5 ', NOW)).toBe(5000);
  });

  it('IMF-fixdate in the future and in the past (past gives 0)', () => {
    expect(parseRetryAfter('Mon, 15 Jan 2024 12:01:00 GMT', NOW)).toBe(60_000);
    expect(parseRetryAfter('Sun, 14 Jan 2024 12:00:00 GMT', NOW)).toBe(0);
  });

  it('obsolete RFC 850 date', () => {
    expect(parseRetryAfter('Monday, 15-Jan-24 12:00:10 GMT', NOW)).toBe(10_000);
    expect(parseRetryAfter('Sunday, 06-Nov-94 08:49:37 GMT', NOW)).toBe(0);
  });

  it('obsolete asctime date', () => {
    expect(parseRetryAfter('Mon Jan 15 12:00:05 2024', NOW)).toBe(5000);
    expect(parseRetryAfter('Mon Jan  1 00:00:00 2024', NOW)).toBe(0);
  });

  it.each([
    undefined,
    '',
    '-5',
    '1.5',
    '5s',
    'soon',
    'Jan 15 2024',
    '2024-01-15T12:00:30Z',
    'Mon Jan 15 12:00:05 24',
    'Mon, 30 Feb 2024 12:00:00 GMT',
    'Mon, 15 Jan 2024 25:00:00 GMT',
    'Mon, 15 Foo 2024 12:00:00 GMT',
    'Mon, 15 Jan 2024 12:00:00 PST',
  ])('invalid value %p gives undefined', (value) => {
    expect(parseRetryAfter(value, NOW)).toBeUndefined();
  });

  it('"1" is delta-seconds, not a date (Date.parse would read it as a year)', () => {
    expect(parseRetryAfter('1', NOW)).toBe(1000);
  });
});

describe('body excerpts in reasons', () => {
  it('collapses whitespace and trims', () => {
    expect(bodyExcerpt('  upstream\n\n  busy\t ')).toBe('upstream busy');
  });

  it('keeps the first 200 characters and marks the cut', () => {
    const excerpt = bodyExcerpt('x'.repeat(500));
    expect(excerpt).toBe(`${'x'.repeat(200)}…`);
    expect(bodyExcerpt('x'.repeat(200))).toBe('x'.repeat(200));
  });

  it('counts code points and never splits a surrogate pair', () => {
    expect(bodyExcerpt('😀'.repeat(5), 3)).toBe('😀😀😀…');
  });

  it('honours a custom maximum, counting collapsed spaces', () => {
    expect(bodyExcerpt('ab   cd', 4)).toBe('ab c…');
  });

  it('masks bearer tokens echoed by the API', () => {
    expect(bodyExcerpt('{"authorization":"Bearer s3cr3t-token"}')).toBe(
      '{"authorization":"Bearer <redacted>"}',
    );
  });

  it('appears in the reason of a failure', () => {
    const result = respond(500, `<html>\n  <body>${'e'.repeat(300)}</body></html>`);
    expect(result.outcome === 'retryable' && result.reason).toBe(
      `runs API answered 500: <html> <body>${'e'.repeat(200 - 13)}…`,
    );
  });
});
