/**
 * Closes learned in bulk from visibility (src/temporal/visibilityCloses.ts): one query per interval, each run seen
 * closed resolves its own watch, and whatever visibility does not answer promptly (unseen too long, a failed or
 * refused call, an unquotable id, `sharpen`) goes to the per-execution watch at once. The List call is a fake that
 * answers from a set of closed runs; the real one runs against Temporal in it_visibility_closes and the cluster.
 */
import { getEventListeners, setMaxListeners } from 'node:events';
import { Counter, Registry } from 'prom-client';
import { GRPC } from '../../src/temporal/grpcStatus';
import {
  type ClosedPage,
  IDS_PER_QUERY,
  VisibilityCloses,
  type VisibilityClosesOptions,
  listClosed,
} from '../../src/temporal/visibilityCloses';

const tick = (ms = 30) => new Promise((r) => setTimeout(r, ms));
/** The promise's value, or 'still waiting' after `ms`. */
const within = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, tick(ms).then(() => 'still waiting' as const)]);
const grpcError = (code: number) =>
  Object.assign(new Error(`code ${code}`), { code, details: `code ${code}` });

/** A fake List: closed runs by workflow id; records every query and how many ran at once; can fail or be slow. */
function visibility() {
  const closed = new Map<string, string[]>();
  const queries: string[] = [];
  let inFlight = 0;
  const v = {
    fail: undefined as Error | undefined,
    delayMs: 0,
    maxInFlight: 0,
    queries,
    list: jest.fn(async (query: string): Promise<ClosedPage> => {
      queries.push(query);
      v.maxInFlight = Math.max(v.maxInFlight, ++inFlight);
      try {
        if (v.delayMs) await tick(v.delayMs);
        if (v.fail) throw v.fail;
        const ids = [...query.matchAll(/WorkflowId IN \(([^)]*)\)/g)][0]![1]!
          .split(', ')
          .map((q) => q.slice(1, -1));
        return {
          executions: ids.flatMap((workflowId) =>
            (closed.get(workflowId) ?? []).map((runId) => ({ workflowId, runId })),
          ),
        };
      } finally {
        inFlight--;
      }
    }),
    close: (workflowId: string, runId: string) =>
      closed.set(workflowId, [...(closed.get(workflowId) ?? []), runId]),
  };
  return v;
}

function setup(extra: Partial<VisibilityClosesOptions> = {}) {
  const v = visibility();
  const clock = { t: 0 };
  const watchOne = jest.fn(async (_id: string, _run: string, _signal: AbortSignal) => true);
  const registry = new Registry();
  const seen = new Counter({ name: 'seen', help: 'h', labelNames: ['via'], registers: [registry] });
  const warn = jest.fn();
  const closes = new VisibilityCloses({
    list: v.list,
    watchOne,
    seen,
    logger: { warn, error: jest.fn() } as never,
    intervalMs: 10,
    handOverMs: 1000,
    now: () => clock.t,
    ...extra,
  });
  const counts = async () =>
    Object.fromEntries((await seen.get()).values.map((x) => [x.labels.via as string, x.value]));
  const signal = new AbortController().signal;
  setMaxListeners(0, signal);
  return { v, closes, watchOne, clock, counts, warn, signal };
}

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

test('a failing List (unreachable, throttled) hands every watch over at once, and new ones for a while, with one line', async () => {
  const { v, closes, watchOne, clock, warn, signal } = setup();
  v.fail = grpcError(8); // RESOURCE_EXHAUSTED: the namespace's visibility rate limit, shared with the Web UI
  expect(await within(closes.watch('dispatch:acme:a', 'r', signal), 300)).toBe(true);
  expect(await within(closes.watch('dispatch:acme:b', 'r', signal), 300)).toBe(true);
  expect(watchOne).toHaveBeenCalledTimes(2);
  expect(v.list).toHaveBeenCalledTimes(1);
  expect(warn).toHaveBeenCalledTimes(1);
  expect(warn.mock.calls[0][1]).toMatch(/cannot list closed dispatches/);
  // A second failure in a row keeps the long polls twice as long (2 s), and is not logged again.
  clock.t = 1000;
  expect(await within(closes.watch('dispatch:acme:c', 'r', signal), 300)).toBe(true);
  expect(v.list).toHaveBeenCalledTimes(2);
  clock.t = 2500;
  expect(await within(closes.watch('dispatch:acme:d', 'r', signal), 300)).toBe(true);
  expect(v.list).toHaveBeenCalledTimes(2);
  // Recovered: visibility answers again, and a later outage is logged again.
  clock.t = 3000;
  v.fail = undefined;
  v.close('dispatch:acme:e', 'r');
  await expect(closes.watch('dispatch:acme:e', 'r', signal)).resolves.toBe(true);
  expect(watchOne).toHaveBeenCalledTimes(4);
  v.fail = grpcError(GRPC.UNAVAILABLE);
  expect(await within(closes.watch('dispatch:acme:f', 'r', signal), 300)).toBe(true);
  expect(warn).toHaveBeenCalledTimes(2);
});

test.each([GRPC.INVALID_ARGUMENT, GRPC.PERMISSION_DENIED, GRPC.UNIMPLEMENTED])(
  'a refused query (code %d) hands every watch to the per-execution watch for 10 minutes, with one line',
  async (code) => {
    const { v, closes, watchOne, clock, warn, signal } = setup();
    v.fail = grpcError(code);
    expect(await within(closes.watch('dispatch:acme:a', 'r', signal), 300)).toBe(true);
    clock.t = 10 * 60_000 - 1;
    expect(await within(closes.watch('dispatch:acme:b', 'r', signal), 300)).toBe(true);
    expect(watchOne).toHaveBeenCalledTimes(2);
    expect(v.list).toHaveBeenCalledTimes(1);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0][1]).toMatch(/refused/);
    // Then visibility is asked again.
    clock.t = 10 * 60_000;
    v.fail = undefined;
    v.close('dispatch:acme:c', 'r');
    await expect(closes.watch('dispatch:acme:c', 'r', signal)).resolves.toBe(true);
    expect(watchOne).toHaveBeenCalledTimes(2);
  },
);

test('sharpen hands every pending watch to the per-execution watch at once', async () => {
  const { closes, watchOne, counts, signal } = setup();
  const a = closes.watch('dispatch:acme:a', 'r', signal);
  const b = closes.watch('dispatch:acme:b', 'r', signal);
  closes.sharpen();
  expect(closes.size).toBe(0);
  await expect(Promise.all([a, b])).resolves.toEqual([true, true]);
  expect(watchOne).toHaveBeenCalledTimes(2);
  expect(await counts()).toEqual({ long_poll: 2 });
});

test('a per-execution watch that throws at once rejects its watch, never loses it', async () => {
  const { closes, watchOne, signal } = setup();
  watchOne.mockImplementation(() => {
    throw new Error('sync');
  });
  const a = closes.watch('dispatch:acme:a', 'r', signal);
  closes.sharpen();
  await expect(a).rejects.toThrow('sync');
  await expect(closes.watch("dispatch:acme:it's", 'r', signal)).rejects.toThrow('sync');
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
