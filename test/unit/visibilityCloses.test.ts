/**
 * Closes learned in bulk from visibility (src/temporal/visibilityCloses.ts): one query per interval for every watched
 * execution, each run seen closed resolves its own watch, and whatever visibility does not answer (too long unseen,
 * a refused query, an unquotable id) goes to the per-execution watch. The List call is a fake that answers from a
 * set of closed runs; the real one runs against Temporal in it_visibility_closes.
 */
import { GRPC } from '../../src/temporal/grpcStatus';
import { type ClosedPage, IDS_PER_QUERY, VisibilityCloses } from '../../src/temporal/visibilityCloses';

function grpcError(code: number, details: string): Error {
  return Object.assign(new Error(details), { code, details });
}

/** A fake List: closed runs by workflow id; records every query; can be told to fail the next calls. */
function visibility() {
  const closed = new Map<string, string[]>();
  const queries: string[] = [];
  let fail: Error | undefined;
  const list = jest.fn(async (query: string): Promise<ClosedPage> => {
    queries.push(query);
    if (fail) throw fail;
    const ids = [...query.matchAll(/'([^']+)'/g)].map((m) => m[1]!).filter((id) => id !== 'Running');
    return {
      executions: ids.flatMap((workflowId) =>
        (closed.get(workflowId) ?? []).map((runId) => ({ workflowId, runId })),
      ),
    };
  });
  return {
    list,
    queries,
    close: (workflowId: string, runId: string) =>
      closed.set(workflowId, [...(closed.get(workflowId) ?? []), runId]),
    failWith: (err: Error | undefined) => (fail = err),
  };
}

function setup(watchOne = jest.fn(async () => true)) {
  const v = visibility();
  let clock = 0;
  const closes = new VisibilityCloses({
    list: v.list,
    watchOne,
    intervalMs: 10,
    handOverMs: 1000,
    now: () => clock,
  });
  return { v, closes, watchOne, advance: (ms: number) => (clock += ms) };
}

import { setMaxListeners } from 'node:events';

const tick = (ms = 30) => new Promise((r) => setTimeout(r, ms));

test('one query asks about every watched execution; each run seen closed resolves its own watch, and only that', async () => {
  const { v, closes, watchOne } = setup();
  const signal = new AbortController().signal;
  const a = closes.watch('dispatch:acme:a', 'run-a', signal);
  const b = closes.watch('dispatch:acme:b', 'run-b2', signal);
  let bDone = false;
  void b.then(() => (bDone = true));
  v.close('dispatch:acme:a', 'run-a');
  v.close('dispatch:acme:b', 'run-b1'); // an earlier run of the same id: not the one watched
  await expect(a).resolves.toBe(true);
  expect(v.queries[0]).toBe(
    "WorkflowId IN ('dispatch:acme:a', 'dispatch:acme:b') AND ExecutionStatus != 'Running'",
  );
  await tick();
  expect(bDone).toBe(false);
  expect(closes.size).toBe(1);
  v.close('dispatch:acme:b', 'run-b2');
  await expect(b).resolves.toBe(true);
  expect(closes.size).toBe(0);
  expect(watchOne).not.toHaveBeenCalled();
  // Nothing watched, nothing asked.
  const asked = v.list.mock.calls.length;
  await tick();
  expect(v.list.mock.calls.length).toBe(asked);
});

test(`more than ${IDS_PER_QUERY} executions are asked about in several queries`, async () => {
  const { v, closes } = setup();
  const signal = new AbortController().signal;
  setMaxListeners(0, signal);
  const all = [];
  for (let i = 0; i < IDS_PER_QUERY + 5; i++) {
    v.close(`dispatch:acme:k${i}`, 'r');
    all.push(closes.watch(`dispatch:acme:k${i}`, 'r', signal));
  }
  await expect(Promise.all(all)).resolves.toHaveLength(IDS_PER_QUERY + 5);
  expect(v.queries).toHaveLength(2);
  expect(v.queries.map((q) => q.split("', '").length)).toEqual([IDS_PER_QUERY, 5]);
});

test('every page of an answer is read', async () => {
  const pages: ClosedPage[] = [
    { executions: [{ workflowId: 'dispatch:acme:a', runId: 'r' }], nextPageToken: Uint8Array.of(1) },
    { executions: [{ workflowId: 'dispatch:acme:b', runId: 'r' }] },
  ];
  const tokens: (Uint8Array | undefined)[] = [];
  const closes = new VisibilityCloses({
    list: async (_q, token) => (tokens.push(token), pages[tokens.length - 1] ?? { executions: [] }),
    watchOne: async () => true,
    intervalMs: 10,
  });
  const signal = new AbortController().signal;
  await expect(
    Promise.all([closes.watch('dispatch:acme:a', 'r', signal), closes.watch('dispatch:acme:b', 'r', signal)]),
  ).resolves.toEqual([true, true]);
  expect(tokens).toEqual([undefined, Uint8Array.of(1)]);
});

test('an execution not seen closed within the hand-over time goes to the per-execution watch, and gets its answer', async () => {
  const watchOne = jest.fn(async () => false); // gone past retention, say
  const { v, closes, advance } = setup(watchOne);
  const signal = new AbortController().signal;
  const early = closes.watch('dispatch:acme:old', 'r', signal);
  await tick();
  expect(watchOne).not.toHaveBeenCalled();
  advance(600);
  const late = closes.watch('dispatch:acme:new', 'r', signal);
  advance(400); // the first one is 1000 ms old now, the second 400
  await expect(early).resolves.toBe(false);
  expect(watchOne).toHaveBeenCalledTimes(1);
  expect(watchOne).toHaveBeenCalledWith('dispatch:acme:old', 'r', signal);
  expect(closes.size).toBe(1);
  v.close('dispatch:acme:new', 'r');
  await expect(late).resolves.toBe(true);
});

test.each([GRPC.INVALID_ARGUMENT, GRPC.PERMISSION_DENIED, GRPC.UNIMPLEMENTED])(
  'a refused query (code %d) hands every watch, now and later, to the per-execution watch, with one line',
  async (code) => {
    const warn = jest.fn();
    const v = visibility();
    const watchOne = jest.fn(async () => true);
    const closes = new VisibilityCloses({
      list: v.list,
      watchOne,
      intervalMs: 10,
      logger: { warn } as never,
    });
    v.failWith(grpcError(code, 'operator IN not supported'));
    const signal = new AbortController().signal;
    await expect(closes.watch('dispatch:acme:a', 'r', signal)).resolves.toBe(true);
    await expect(closes.watch('dispatch:acme:b', 'r', signal)).resolves.toBe(true);
    await tick();
    expect(watchOne).toHaveBeenCalledTimes(2);
    expect(v.list).toHaveBeenCalledTimes(1);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0][1]).toMatch(/refused/);
  },
);

test('a failing List (unreachable, throttled) is asked again later, less often, and an answer then resolves', async () => {
  const warn = jest.fn();
  const v = visibility();
  const closes = new VisibilityCloses({
    list: v.list,
    watchOne: async () => true,
    intervalMs: 5,
    logger: { warn } as never,
  });
  v.failWith(grpcError(GRPC.UNAVAILABLE, 'connection refused'));
  const signal = new AbortController().signal;
  const w = closes.watch('dispatch:acme:a', 'r', signal);
  await tick(200);
  const failed = v.list.mock.calls.length;
  // Backed off: 5 ms doubling (10, 20, 40, 80, ...), not one call every 5 ms.
  expect(failed).toBeGreaterThanOrEqual(2);
  expect(failed).toBeLessThanOrEqual(6);
  expect(warn).toHaveBeenCalledTimes(1);
  v.failWith(undefined);
  v.close('dispatch:acme:a', 'r');
  await expect(w).resolves.toBe(true);
});

test('an id the query could not quote goes straight to the per-execution watch', async () => {
  const { v, closes, watchOne } = setup();
  const signal = new AbortController().signal;
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
