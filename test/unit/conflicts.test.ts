/**
 * The per-key 409 bound of test/support/conflicts.ts on the real runs API double (127.0.0.1): a second POST of an
 * answered dispatch fails it; a scripted lost answer, or an allowance with its reason, explains one 409.
 */
import { request } from 'undici';
import { expectConflictsBounded, perKeyCounts } from '../support/conflicts';
import { RunsApiDouble } from '../../devstack/runsApiDouble';

async function post(api: RunsApiDouble, dispatchKey: string): Promise<number | 'dropped'> {
  try {
    const res = await request(`${api.url}/v1/runs`, {
      method: 'POST',
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
      a: { posts: 2, created: 1, conflicts: 1, lostAnswerFaults: 0 },
      b: { posts: 1, created: 1, conflicts: 0, lostAnswerFaults: 0 },
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
});
