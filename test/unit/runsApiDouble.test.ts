/**
 * (e) The runs API double behaves like the API's admission layer, with scriptable faults. Real HTTP on
 * 127.0.0.1; no Kafka or Temporal needed.
 */
import { request } from 'undici';
import { RunsApiDouble } from '../../devstack/runsApiDouble';

const body = (dispatchKey: string) =>
  JSON.stringify({
    workflow_ref: 'onboarding@v3',
    input: { user: 42 },
    goal_id: null,
    dispatch_key: dispatchKey,
  });

async function post(api: RunsApiDouble, dispatchKey: string, headers: Record<string, string> = {}) {
  const res = await request(`${api.url}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: body(dispatchKey),
  });
  return {
    status: res.statusCode,
    headers: res.headers,
    json: (await res.body.json()) as { run_id?: string },
  };
}

describe('runs API double', () => {
  let api: RunsApiDouble;
  beforeEach(async () => {
    api = await RunsApiDouble.start();
  });
  afterEach(async () => {
    await api.close();
  });

  test('a held call stays unanswered, and unadmitted, until released; in-flight calls are counted', async () => {
    api.scriptFor('held', { kind: 'hold' });
    const pending = post(api, 'held');
    const other = post(api, 'other-1');
    await api.waitFor((a) => a.heldCount === 1, 5_000, 'the call to be held');
    expect((await other).status).toBe(201);
    expect(api.runs.has('held')).toBe(false);
    expect(api.inFlight).toBe(1);
    expect(api.maxInFlight).toBe(2);
    expect(api.release()).toBe(1);
    expect((await pending).status).toBe(201);
    expect(api.runs.has('held')).toBe(true);
    expect(api.inFlight).toBe(0);
  });

  test('first call for a dispatch_key is 201 with a run id; later calls are 409 with the same id', async () => {
    const first = await post(api, 'd-1');
    const second = await post(api, 'd-1');
    const other = await post(api, 'd-2');
    expect(first.status).toBe(201);
    expect(first.json.run_id).toMatch(/^run-/);
    expect(second.status).toBe(409);
    expect(second.json.run_id).toBe(first.json.run_id);
    expect(other.status).toBe(201);
    expect(other.json.run_id).not.toBe(first.json.run_id);
    expect(api.runs.size).toBe(2);
  });

  test('records every request with headers and body', async () => {
    await post(api, 'd-rec', { 'x-tenant-id': 'acme', 'idempotency-key': 'd-rec' });
    expect(api.requests).toHaveLength(1);
    const [rec] = api.requests;
    expect(rec!.method).toBe('POST');
    expect(rec!.path).toBe('/v1/runs');
    expect(rec!.headers['x-tenant-id']).toBe('acme');
    expect(rec!.headers['idempotency-key']).toBe('d-rec');
    expect(rec!.body).toBe(body('d-rec'));
    expect(rec!.answer).toBe(201);
    expect(api.requestsFor('d-rec')).toHaveLength(1);
  });

  test('scripted 503 with Retry-After, then 422, are answered in order and create no run', async () => {
    api.script({ kind: 'status', status: 503, retryAfter: '2' }, { kind: 'status', status: 422 });
    const a = await post(api, 'd-f');
    const b = await post(api, 'd-f');
    const c = await post(api, 'd-f');
    expect([a.status, b.status, c.status]).toEqual([503, 422, 201]);
    expect(a.headers['retry-after']).toBe('2');
    expect(api.runs.size).toBe(1);
  });

  test('per-key scripts apply only to that dispatch_key', async () => {
    api.scriptFor('d-slow', { kind: 'status', status: 500 });
    expect((await post(api, 'd-fast')).status).toBe(201);
    expect((await post(api, 'd-slow')).status).toBe(500);
    expect((await post(api, 'd-slow')).status).toBe(201);
  });

  test('a delay fault holds the answer for at least that long', async () => {
    api.script({ kind: 'delay', ms: 300 });
    const started = Date.now();
    expect((await post(api, 'd-delay')).status).toBe(201);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });

  test('a dropped socket gives the client a transport error; after an admit-then-drop the retry sees 409', async () => {
    api.script({ kind: 'drop' }, { kind: 'drop', afterAdmit: true });
    await expect(post(api, 'd-drop')).rejects.toMatchObject({
      code: expect.stringMatching(/UND_ERR_SOCKET|ECONNRESET/),
    });
    expect(api.runs.size).toBe(0);
    await expect(post(api, 'd-drop')).rejects.toMatchObject({
      code: expect.stringMatching(/UND_ERR_SOCKET|ECONNRESET/),
    });
    expect(api.runs.size).toBe(1);
    const retry = await post(api, 'd-drop');
    expect(retry.status).toBe(409);
    expect(retry.json.run_id).toBe(api.runs.get('d-drop'));
    expect(api.requests.map((r) => r.answer)).toEqual(['dropped', 'dropped', 409]);
  });

  test('a standing fault answers every call until cleared', async () => {
    api.always({ kind: 'status', status: 503 });
    expect((await post(api, 'd-down')).status).toBe(503);
    expect((await post(api, 'd-down')).status).toBe(503);
    api.always(undefined);
    expect((await post(api, 'd-down')).status).toBe(201);
  });

  test('refusing connections: a call at the API loses its socket, new calls are refused, then the same port admits again', async () => {
    const port = api.port;
    expect((await post(api, 'd-before')).status).toBe(201);
    api.scriptFor('d-at-api', { kind: 'hold' });
    const atApi = post(api, 'd-at-api');
    await api.waitFor((a) => a.heldCount === 1, 5_000, 'the call to be at the API');
    await api.refuseConnections();
    await expect(atApi).rejects.toMatchObject({ code: expect.stringMatching(/UND_ERR_SOCKET|ECONNRESET/) });
    await expect(post(api, 'd-down')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(api.requestsFor('d-down')).toHaveLength(0);
    await api.acceptConnections();
    expect(api.port).toBe(port);
    expect(api.url).toBe(`http://127.0.0.1:${port}`);
    expect((await post(api, 'd-down')).status).toBe(201);
    expect([...api.runs.keys()]).toEqual(['d-before', 'd-down']);
  });

  test('with a token configured, a request without the bearer token gets 401', async () => {
    const secured = await RunsApiDouble.start({ token: 's3cret' });
    try {
      expect((await post(secured, 'd-auth')).status).toBe(401);
      expect((await post(secured, 'd-auth', { authorization: 'Bearer s3cret' })).status).toBe(201);
    } finally {
      await secured.close();
    }
  });

  test('waitFor resolves on a condition over recorded requests', async () => {
    const waiting = api.waitFor((a) => a.requests.length >= 2, 5000, 'two requests');
    await post(api, 'w-1');
    await post(api, 'w-2');
    await expect(waiting).resolves.toBeUndefined();
  });
});
