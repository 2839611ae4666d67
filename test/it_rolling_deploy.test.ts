/**
 * Two worker versions polling one task queue, as during a Kubernetes RollingUpdate: the earlier version must
 * never be handed a task whose arguments it reads differently. The earlier worker is a real build of an earlier
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
