/**
 * Closes learned in bulk from visibility (src/temporal/visibilityCloses.ts): one query per interval, each run seen
 * closed resolves its own watch, an execution unseen too long goes to the per-execution watch (the other ways to
 * it: visibilityClosesFallback). The List call is a fake (test/support/visibilityFake.ts); the real one runs
 * against Temporal in it_visibility_closes and the cluster suite.
 */
import { getEventListeners } from 'node:events';
import { type ClosedPage, IDS_PER_QUERY, listClosed } from '../../src/temporal/closedRuns';
import { setup, tick, within } from '../support/visibilityFake';

test('one query asks about every watched execution; each run seen closed resolves its own watch, and only that', async () => {
  const { v, closes, watchOne, counts, signal } = setup();
  const a = closes.watch('dispatch:acme:a', 'run-a', signal);
  const b = closes.watch('dispatch:acme:b', 'run-b2', signal);
  v.close('dispatch:acme:a', 'run-a');
  v.close('dispatch:acme:b', 'run-b1'); // an earlier run of the same id: not the one watched
  await expect(a).resolves.toBe(true);
  expect(v.queries[0]).toBe(
    "WorkflowId IN ('dispatch:acme:a', 'dispatch:acme:b') AND ExecutionStatus IN ('Completed', 'Failed', 'Canceled', 'Terminated', 'ContinuedAsNew', 'TimedOut')",
  );
  expect(await within(b, 60)).toBe('still waiting');
  expect(closes.size).toBe(1);
  v.close('dispatch:acme:b', 'run-b2');
  await expect(b).resolves.toBe(true);
  expect(closes.size).toBe(0);
  expect(watchOne).not.toHaveBeenCalled();
  expect(await counts()).toEqual({ visibility: 2 });
  // Nothing watched, nothing asked; a settled watch leaves no abort listener behind.
  const asked = v.list.mock.calls.length;
  await tick();
  expect(v.list.mock.calls.length).toBe(asked);
  expect(getEventListeners(signal, 'abort')).toHaveLength(0);
});

test(`more than ${IDS_PER_QUERY} executions: one call per interval, asking about them in turns`, async () => {
  const { v, closes, signal } = setup();
  const all = [];
  for (let i = 0; i < IDS_PER_QUERY + 5; i++) {
    v.close(`dispatch:acme:k${i}`, 'r');
    all.push(closes.watch(`dispatch:acme:k${i}`, 'r', signal));
  }
  await expect(Promise.all(all)).resolves.toHaveLength(IDS_PER_QUERY + 5);
  expect(v.queries.map((q) => q.split("'dispatch:").length - 1)).toEqual([IDS_PER_QUERY, 5]);
  expect(v.maxInFlight).toBe(1);
});

test('polls never overlap, however slow a List is', async () => {
  const { v, closes, signal } = setup({ intervalMs: 5 });
  v.delayMs = 50;
  for (let i = 0; i < 10; i++) {
    void closes.watch(`dispatch:acme:k${i}`, 'r', signal);
    await tick(20);
  }
  expect(v.maxInFlight).toBe(1);
});

test('every page of an answer is read', async () => {
  const pages: ClosedPage[] = [
    { executions: [{ workflowId: 'dispatch:acme:a', runId: 'r' }], nextPageToken: Uint8Array.of(1) },
    { executions: [{ workflowId: 'dispatch:acme:b', runId: 'r' }] },
  ];
  const tokens: (Uint8Array | undefined)[] = [];
  const { closes, signal } = setup({
    list: async (_q, token) => (tokens.push(token), pages[tokens.length - 1] ?? { executions: [] }),
  });
  await expect(
    Promise.all([closes.watch('dispatch:acme:a', 'r', signal), closes.watch('dispatch:acme:b', 'r', signal)]),
  ).resolves.toEqual([true, true]);
  expect(tokens).toEqual([undefined, Uint8Array.of(1)]);
});

test('an execution not seen closed within the hand-over time goes to the per-execution watch, and gets its answer', async () => {
  const { v, closes, watchOne, clock, counts, signal } = setup();
  watchOne.mockResolvedValue(false); // gone past retention, say
  const early = closes.watch('dispatch:acme:old', 'r', signal);
  expect(await within(early, 60)).toBe('still waiting');
  clock.t = 600;
  const late = closes.watch('dispatch:acme:new', 'r', signal);
  clock.t = 1000; // the first one is 1000 ms old now, the second 400
  await expect(early).resolves.toBe(false);
  expect(watchOne.mock.calls).toEqual([['dispatch:acme:old', 'r', signal]]);
  expect(closes.size).toBe(1);
  v.close('dispatch:acme:new', 'r');
  await expect(late).resolves.toBe(true);
  expect(await counts()).toEqual({ visibility: 1, long_poll: 1 });
});

test('an id the query could not quote goes straight to the per-execution watch', async () => {
  const { v, closes, watchOne, signal } = setup();
  await expect(closes.watch("dispatch:acme:it's", 'r', signal)).resolves.toBe(true);
  expect(watchOne).toHaveBeenCalledTimes(1);
  await tick();
  expect(v.list).not.toHaveBeenCalled();
});

test('an abort rejects the watches it ends and they are asked about no more', async () => {
  const { v, closes } = setup();
  const abort = new AbortController();
  const w = closes.watch('dispatch:acme:a', 'r', abort.signal);
  abort.abort(new Error('closing'));
  await expect(w).rejects.toThrow('closing');
  expect(closes.size).toBe(0);
  await expect(closes.watch('dispatch:acme:b', 'r', abort.signal)).rejects.toThrow('closing');
  await tick();
  expect(v.list).not.toHaveBeenCalled();
});

test('listClosed keeps only the runs in a closed status: a paused (8) or running one is open', async () => {
  const status = { RUNNING: 1, COMPLETED: 2, PAUSED: 8 };
  const client = {
    options: { namespace: 'default' },
    connection: { withDeadline: (_d: number, fn: () => unknown) => fn() },
    workflowService: {
      listWorkflowExecutions: async () => ({
        executions: [
          { execution: { workflowId: 'dispatch:acme:a', runId: 'r' }, status: status.PAUSED },
          { execution: { workflowId: 'dispatch:acme:b', runId: 'r' }, status: status.RUNNING },
          { execution: { workflowId: 'dispatch:acme:c', runId: 'r' }, status: status.COMPLETED },
        ],
      }),
    },
  };
  const page = await listClosed(client as never, 'q');
  expect(page.executions).toEqual([{ workflowId: 'dispatch:acme:c', runId: 'r' }]);
});

test('two runs of one workflow id watched at once: each resolves on its own close, neither is lost', async () => {
  const { v, closes, watchOne, signal } = setup();
  const first = closes.watch('dispatch:acme:a', 'run-1', signal);
  const second = closes.watch('dispatch:acme:a', 'run-2', signal);
  expect(closes.size).toBe(2);
  v.close('dispatch:acme:a', 'run-2');
  await expect(second).resolves.toBe(true);
  expect(closes.size).toBe(1);
  expect(await within(first, 60)).toBe('still waiting');
  v.close('dispatch:acme:a', 'run-1');
  await expect(first).resolves.toBe(true);
  expect(closes.size).toBe(0);
  expect(watchOne).not.toHaveBeenCalled();
});
