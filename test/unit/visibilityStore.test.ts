/**
 * The lone watch and the visibility store (src/temporal/visibilityStore.ts): no List call while the store is not one
 * that answers the query from an index, every watch on its long poll, one line; the store asked again every 10
 * minutes; a store question or a call that never answers is a failed call. And how GetClusterInfo is read.
 */
import { GRPC } from '../../src/temporal/grpcStatus';
import { answersFromIndex, visibilityStore } from '../../src/temporal/visibilityStore';
import { grpcError, setup, tick, within } from '../support/visibilityFake';

const SQLITE = { indexed: false, store: 'sqlite' };
const POSTGRES = { indexed: true, store: 'postgres12' };

test('a store that scans (SQLite) gets no List call: every watch goes to its long poll, with one line', async () => {
  const store = jest.fn(async () => SQLITE);
  const { v, closes, watchOne, clock, info, counts, signal } = setup({ store });
  expect(await within(closes.watch('dispatch:acme:a', 'r', signal), 300)).toBe(true);
  expect(closes.seesLate()).toBe(false);
  expect(await within(closes.watch('dispatch:acme:b', 'r', signal), 300)).toBe(true);
  expect(v.list).not.toHaveBeenCalled();
  expect(watchOne).toHaveBeenCalledTimes(2);
  expect(store).toHaveBeenCalledTimes(1);
  expect(info).toHaveBeenCalledTimes(1);
  expect(info.mock.calls[0]).toEqual([{ store: 'sqlite' }, expect.stringMatching(/not one known to list/)]);
  expect(await counts()).toEqual({ long_poll: 2 });
  // Asked again 10 minutes later, and not logged again.
  clock.t = 10 * 60_000;
  expect(closes.seesLate()).toBe(true);
  expect(await within(closes.watch('dispatch:acme:c', 'r', signal), 300)).toBe(true);
  expect(store).toHaveBeenCalledTimes(2);
  expect(info).toHaveBeenCalledTimes(1);
  // A store changed meanwhile (a migration to an indexed one): visibility answers again.
  store.mockResolvedValue(POSTGRES);
  clock.t = 20 * 60_000;
  v.close('dispatch:acme:d', 'r');
  await expect(closes.watch('dispatch:acme:d', 'r', signal)).resolves.toBe(true);
  expect(v.list).toHaveBeenCalledTimes(1);
  expect(watchOne).toHaveBeenCalledTimes(3);
});

test('an indexed store is asked once per 10 minutes, not per call', async () => {
  const store = jest.fn(async () => POSTGRES);
  const { v, closes, watchOne, clock, signal } = setup({ store });
  for (const k of ['a', 'b', 'c']) {
    v.close(`dispatch:acme:${k}`, 'r');
    await expect(closes.watch(`dispatch:acme:${k}`, 'r', signal)).resolves.toBe(true);
    clock.t += 1000;
  }
  expect(v.list).toHaveBeenCalledTimes(3);
  expect(store).toHaveBeenCalledTimes(1);
  clock.t = 10 * 60_000;
  v.close('dispatch:acme:d', 'r');
  await expect(closes.watch('dispatch:acme:d', 'r', signal)).resolves.toBe(true);
  expect(store).toHaveBeenCalledTimes(2);
  expect(watchOne).not.toHaveBeenCalled();
});

test('a store question that fails is a failed call; on a store that scans, each later outage warns again', async () => {
  const store = jest.fn(async (): Promise<typeof SQLITE> => {
    throw grpcError(GRPC.UNAVAILABLE);
  });
  const { v, closes, watchOne, clock, warn, signal } = setup({ store });
  expect(await within(closes.watch('dispatch:acme:a', 'r', signal), 300)).toBe(true);
  expect(watchOne).toHaveBeenCalledTimes(1);
  expect(warn).toHaveBeenCalledTimes(1);
  expect(v.list).not.toHaveBeenCalled();
  // After the first failure's 1 s: the store answers (it scans), which ends the outage.
  store.mockResolvedValue(SQLITE);
  clock.t = 1000;
  expect(await within(closes.watch('dispatch:acme:b', 'r', signal), 300)).toBe(true);
  expect(store).toHaveBeenCalledTimes(2);
  // A later outage is a new one: logged again, backing off from 1 s again.
  store.mockRejectedValue(grpcError(GRPC.UNAVAILABLE));
  clock.t = 1000 + 10 * 60_000;
  expect(await within(closes.watch('dispatch:acme:c', 'r', signal), 300)).toBe(true);
  expect(warn).toHaveBeenCalledTimes(2);
  clock.t += 1000;
  expect(await within(closes.watch('dispatch:acme:d', 'r', signal), 300)).toBe(true);
  expect(store).toHaveBeenCalledTimes(4);
});

test.each([
  ['the store question', { store: () => new Promise<never>(() => undefined) }],
  ['a List call', { list: () => new Promise<never>(() => undefined) }],
])(
  '%s that never answers is a failed call after the local limit: the watches go to their long polls',
  async (_what, never) => {
    const { closes, watchOne, warn, signal } = setup({ ...never, callLimitMs: 50 });
    expect(await within(closes.watch('dispatch:acme:a', 'r', signal), 400)).toBe(true);
    expect(watchOne).toHaveBeenCalledTimes(1);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0][0].err)).toMatch(/did not answer within 50 ms/);
  },
);

test('a store question answered after close() hands nothing over and logs nothing', async () => {
  let answer!: (verdict: typeof SQLITE) => void;
  const store = jest.fn(() => new Promise<typeof SQLITE>((r) => (answer = r)));
  const { v, closes, watchOne, info } = setup({ store });
  const abort = new AbortController();
  const a = closes.watch('dispatch:acme:a', 'r', abort.signal);
  await tick();
  expect(store).toHaveBeenCalledTimes(1);
  closes.close();
  abort.abort(new Error('closing'));
  answer(SQLITE);
  await expect(a).rejects.toThrow('closing');
  await tick();
  expect(info).not.toHaveBeenCalled();
  expect(watchOne).not.toHaveBeenCalled();
  expect(v.list).not.toHaveBeenCalled();
});

test.each([
  ['postgres12', true],
  ['postgres12_pgx', true],
  ['elasticsearch', true],
  ['elasticsearch,sqlite', true], // dual visibility: reads go to the first
  ['sqlite', false],
  ['SQLite', false],
  ['postgres12,sqlite', true],
  ['sqlite,elasticsearch', false],
  ['mysql8', false], // not measured: its planner may walk the ORDER BY index as SQLite's does
  ['my-custom-plugin', false],
  ['not-postgres', false],
  ['', false],
])('the store %p answers from an index: %p', (store, indexed) => {
  expect(answersFromIndex(store)).toBe(indexed);
});

function client(getClusterInfo: () => Promise<{ visibilityStore?: string | null }>) {
  const deadlines: number[] = [];
  const c = {
    connection: {
      withDeadline: (deadline: number, fn: () => Promise<unknown>) => (
        deadlines.push(deadline - Date.now()),
        fn()
      ),
    },
    workflowService: { getClusterInfo: jest.fn(getClusterInfo) },
  };
  return { ask: visibilityStore(c as never), deadlines, calls: c.workflowService.getClusterInfo };
}

test('GetClusterInfo names the store, with a deadline 2 s ahead', async () => {
  const sqlite = client(async () => ({ visibilityStore: 'sqlite' }));
  await expect(sqlite.ask()).resolves.toEqual(SQLITE);
  await expect(client(async () => ({ visibilityStore: 'postgres12' })).ask()).resolves.toEqual(POSTGRES);
  await expect(client(async () => ({})).ask()).resolves.toEqual({ indexed: false, store: 'unnamed' });
  expect(sqlite.deadlines[0]).toBeGreaterThan(1500);
  expect(sqlite.deadlines[0]).toBeLessThanOrEqual(2000);
});

test.each([GRPC.PERMISSION_DENIED, GRPC.UNIMPLEMENTED])(
  'a GetClusterInfo refused (code %d) is an unknown store, not indexed, and never asked again',
  async (code) => {
    const refused = client(async () => Promise.reject(grpcError(code)));
    const first = await refused.ask();
    expect(first).toMatchObject({ indexed: false, final: true });
    expect(first.store).toMatch(/^unknown \(GetClusterInfo: [A-Z_]+\)$/);
    await expect(refused.ask()).resolves.toEqual(first);
    expect(refused.calls).toHaveBeenCalledTimes(1);
  },
);

test.each([GRPC.UNAVAILABLE, GRPC.DEADLINE_EXCEEDED, GRPC.RESOURCE_EXHAUSTED])(
  'a transient GetClusterInfo failure (code %d) rejects, and the store is asked again next time',
  async (code) => {
    const down = client(async () => Promise.reject(grpcError(code)));
    await expect(down.ask()).rejects.toThrow(`code ${code}`);
    await expect(down.ask()).rejects.toThrow(`code ${code}`);
    expect(down.calls).toHaveBeenCalledTimes(2);
  },
);

test('a failure that is not a gRPC status rejects with itself', async () => {
  await expect(client(async () => Promise.reject(new Error('not a gRPC error'))).ask()).rejects.toThrow(
    'not a gRPC error',
  );
});
