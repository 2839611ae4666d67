/**
 * Two worker versions polling one task queue, as during a Kubernetes RollingUpdate: the earlier version must
 * never be handed a task whose arguments it reads differently, and executions of each version's shape go on to
 * complete while both poll. The earlier worker is a real build of an earlier
 * commit (test/support/earlierBuild.ts); the API double records every body that reaches it.
 */
import { earlierBuild } from './support/earlierBuild';
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

jest.setTimeout(420_000);

/**
 * The last commit whose `postRun` took the whole dispatch as its one argument (it reads `dispatch.input_json`);
 * the next commit changed it to `postRun(head, bytes)` under the same name.
 */
const ONE_ARGUMENT_POSTRUN = 'acaa881';
/** The last commit before the local-first call: its workers schedule the call as an activity from attempt 1. */
const BEFORE_LOCAL_FIRST = '71b7985';

let h: Harness;
afterEach(async () => {
  await h?.cleanup();
});

test('a worker of the one-argument postRun version, polling beside the current one, never posts a wrong body', async () => {
  const oldRoot = earlierBuild(ONE_ARGUMENT_POSTRUN);
  h = await createHarness({
    env: {
      // Room to swap workers between the first attempt and its retry, and attempts to spare for the swap.
      RETRY_INITIAL_INTERVAL_MS: '4000',
      RETRY_MAX_INTERVAL_MS: '4000',
      RETRY_MAX_ATTEMPTS: '50',
    },
  });
  const input = { user: 42, list: [1, 2, 3] };
  const expected = { workflow_ref: 'onboarding@v3', input, goal_id: 'g-17', dispatch_key: 'roll-1' };
  h.api.scriptFor('roll-1', { kind: 'status', status: 503 });

  // The current worker runs the workflow and the first attempt...
  const current = await h.startWorker('current');
  await h.startIngester();
  await h.publish(JSON.stringify(expected));
  await waitFor(() => h.api.requestsFor('roll-1').length === 1, { what: 'the first attempt' });
  // ...then the rollout turns: only the earlier version polls when the retry is due.
  await current.stop();
  const earlier = await h.startWorker('earlier', oldRoot);
  const handle = h.client.workflow.getHandle(h.wfId('roll-1'));
  // Either the earlier worker made the retry (a request reached the API) or it refused the task.
  await waitFor(
    async () => {
      if (h.api.requestsFor('roll-1').length > 1) return true;
      const d = await handle.describe();
      const failure = d.raw.pendingActivities?.[0]?.lastFailure;
      return failure?.applicationFailureInfo?.type === 'NotFoundError';
    },
    { timeoutMs: 60_000, what: 'the earlier worker to take the retry' },
  );
  // The rollout completes: a current worker again, the earlier one gone.
  await h.startWorker('current-2');
  await earlier.stop();
  expect(await handle.result()).toMatchObject({ admission: 'created' });

  const bodies = h.api.requestsFor('roll-1').map((r) => r.json);
  expect(bodies.length).toBeGreaterThanOrEqual(2);
  for (const body of bodies) expect(body).toEqual(expected);
  await h.expectCommittedAtLogEnd();
});

test('workers before and after the local-first call side by side: executions of both shapes complete, each body right', async () => {
  const oldRoot = earlierBuild(BEFORE_LOCAL_FIRST);
  h = await createHarness({
    env: { RETRY_INITIAL_INTERVAL_MS: '4000', RETRY_MAX_INTERVAL_MS: '4000', RETRY_MAX_ATTEMPTS: '50' },
  });
  const harness = h;
  const body = (key: string) => ({
    workflow_ref: 'onboarding@v3',
    input: { user: key, list: [1, 2, 3] },
    goal_id: 'g-17',
    dispatch_key: key,
  });
  // Each first call is answered 503, so a retry of each shape is due while both versions poll.
  for (const key of ['old-1', 'new-1']) harness.api.scriptFor(key, { kind: 'status', status: 503 });
  const firstCall = (key: string) =>
    waitFor(() => harness.api.requestsFor(key).length === 1, { what: `the first call of ${key}` });

  // The earlier version alone starts one execution: the call is an activity from its first attempt...
  const earlier = await harness.startWorker('earlier', oldRoot);
  await harness.startIngester();
  await harness.publish(JSON.stringify(body('old-1')));
  await firstCall('old-1');
  await earlier.stop();
  // ...the current version alone starts two: a local try that fails, and one that succeeds.
  await harness.startWorker('current');
  await harness.publish(JSON.stringify(body('new-1')));
  await harness.publish(JSON.stringify(body('new-2')));
  await firstCall('new-1');
  // Both versions poll while the retries are due.
  const earlier2 = await harness.startWorker('earlier-2', oldRoot);
  const results = await Promise.all(
    ['old-1', 'new-1', 'new-2'].map((key) => harness.client.workflow.getHandle(harness.wfId(key)).result()),
  );
  expect(results).toEqual([
    expect.objectContaining({ admission: 'created' }),
    expect.objectContaining({ admission: 'created' }),
    expect.objectContaining({ admission: 'created' }),
  ]);
  await earlier2.stop();

  // Each execution kept the shape of the version that ran its first workflow task.
  const shape = async (key: string) => {
    const { events } = await harness.client.workflow.getHandle(harness.wfId(key)).fetchHistory();
    return (events ?? [])
      .map(
        (e) =>
          e.activityTaskScheduledEventAttributes?.activityType?.name ??
          (e.markerRecordedEventAttributes?.markerName === 'core_local_activity' ? 'local try' : undefined),
      )
      .filter(Boolean);
  };
  expect(await shape('old-1')).toEqual(['postRunWithInputBytes']);
  expect(await shape('new-1')).toEqual(['local try', 'postRunAfterLocalTry']);
  expect(await shape('new-2')).toEqual(['local try']);
  for (const key of ['old-1', 'new-1', 'new-2']) {
    const bodies = harness.api.requestsFor(key).map((r) => r.json);
    expect(bodies.length).toBeGreaterThanOrEqual(key === 'new-2' ? 1 : 2);
    for (const b of bodies) expect(b).toEqual(body(key));
  }
  await harness.expectCommittedAtLogEnd();
});
