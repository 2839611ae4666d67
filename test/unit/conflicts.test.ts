/**
 * The per-key 409 bound of test/support/conflicts.ts on the real runs API double (127.0.0.1): a second POST of an
 * answered dispatch fails it; a scripted lost answer, or an allowance with its reason, explains one 409.
 */
import { request } from 'undici';
import { expectConflictsBounded, perKeyCounts } from '../support/conflicts';
import { RunsApiDouble } from '../../devstack/runsApiDouble';

/** One POST; `timeoutMs` is the client's own timeout (it hangs up then), as the relay's RUNS_API_TIMEOUT_MS. */
async function post(
  api: RunsApiDouble,
  dispatchKey: string,
  timeoutMs?: number,
): Promise<number | 'dropped'> {
  try {
    const res = await request(`${api.url}/v1/runs`, {
      method: 'POST',
      ...(timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(timeoutMs) }),
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ workflow_ref: 'w@1', input: {}, goal_id: null, dispatch_key: dispatchKey }),
    });
    await res.body.dump();
    return res.statusCode;
  } catch {
    return 'dropped';
  }
}

describe('409s bounded per key', () => {
  let api: RunsApiDouble;
  beforeEach(async () => {
    api = await RunsApiDouble.start();
  });
  afterEach(async () => {
    await api.close();
  });

  it('counts POSTs, 201s and 409s per key', async () => {
    expect([await post(api, 'a'), await post(api, 'a'), await post(api, 'b')]).toEqual([201, 409, 201]);
    expect(Object.fromEntries(perKeyCounts(api))).toEqual({
      a: { posts: 2, created: 1, conflicts: 1, lostAnswers: 0 },
      b: { posts: 1, created: 1, conflicts: 0, lostAnswers: 0 },
    });
  });

  it('fails on a second POST of an answered dispatch, which "one run per key" alone would not see', async () => {
    await post(api, 'a');
    await post(api, 'a');
    expect(api.runs.size).toBe(1);
    expect(() => expectConflictsBounded(api)).toThrow(/a: 1 409\(s\) of 2 POST\(s\), bound 0/);
  });

  it('lets a scripted lost answer, or an allowance, explain one 409 each', async () => {
    api.scriptFor('lost', { kind: 'drop', afterAdmit: true });
    expect([await post(api, 'lost'), await post(api, 'lost')]).toEqual(['dropped', 409]);
    expect(() => expectConflictsBounded(api)).not.toThrow();
    expect(await post(api, 'lost')).toBe(409);
    expect(() => expectConflictsBounded(api)).toThrow(/lost: 2 409/);
    expect(() =>
      expectConflictsBounded(api, [{ runKey: 'lost', conflicts: 1, why: 'a worker killed mid-call' }]),
    ).not.toThrow();
  });

  it('does not let a drop before admission explain a 409: nothing was admitted, so no answer was lost', async () => {
    api.scriptFor('early', { kind: 'drop' });
    expect([await post(api, 'early'), await post(api, 'early'), await post(api, 'early')]).toEqual([
      'dropped',
      201,
      409,
    ]);
    expect(() => expectConflictsBounded(api)).toThrow(/early: 1 409\(s\) of 3 POST\(s\), bound 0/);
  });

  it('does not let a delay the client waited out explain a 409: the client got its answer', async () => {
    const clientTimeoutMs = 5_000;
    api.scriptFor('slow', { kind: 'delay', ms: clientTimeoutMs / 100 });
    expect([await post(api, 'slow', clientTimeoutMs), await post(api, 'slow', clientTimeoutMs)]).toEqual([
      201, 409,
    ]);
    expect(() => expectConflictsBounded(api)).toThrow(/slow: 1 409\(s\) of 2 POST\(s\), bound 0/);
  });

  it("lets a delay past the client's timeout explain one 409: admitted after the client hung up", async () => {
    const clientTimeoutMs = 100;
    api.scriptFor('late', { kind: 'delay', ms: clientTimeoutMs * 5 });
    expect(await post(api, 'late', clientTimeoutMs)).toBe('dropped');
    await api.waitFor((a) => a.runs.has('late'), 10_000, 'the late call admitted');
    expect(await post(api, 'late')).toBe(409);
    expect(perKeyCounts(api).get('late')?.lostAnswers).toBe(1);
    expect(() => expectConflictsBounded(api)).not.toThrow();
  });
});
