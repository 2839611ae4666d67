/**
 * The lone watch on a visibility store that scans the namespace for its query (src/temporal/visibilityStore.ts):
 * no List call while the store says it scans, every watch on its long poll, one line; the store asked again every
 * 10 minutes. And how the store's name is read from GetClusterInfo.
 */
import { GRPC } from '../../src/temporal/grpcStatus';
import { answersFromIndex, visibilityIndexed } from '../../src/temporal/visibilityStore';
import { grpcError, setup, tick, within } from '../support/visibilityFake';

test('a store that scans (SQLite) gets no List call: every watch goes to its long poll, with one line', async () => {
  const indexed = jest.fn(async () => false);
  const { v, closes, watchOne, clock, info, counts, signal } = setup({ indexed });
  expect(await within(closes.watch('dispatch:acme:a', 'r', signal), 300)).toBe(true);
  expect(await within(closes.watch('dispatch:acme:b', 'r', signal), 300)).toBe(true);
  expect(v.list).not.toHaveBeenCalled();
  expect(watchOne).toHaveBeenCalledTimes(2);
  expect(indexed).toHaveBeenCalledTimes(1);
  expect(info).toHaveBeenCalledTimes(1);
  expect(info.mock.calls[0][0]).toMatch(/scans the namespace/);
  expect(await counts()).toEqual({ long_poll: 2 });
  // Asked again 10 minutes later, and not logged again.
  clock.t = 10 * 60_000;
  expect(await within(closes.watch('dispatch:acme:c', 'r', signal), 300)).toBe(true);
  expect(indexed).toHaveBeenCalledTimes(2);
  expect(info).toHaveBeenCalledTimes(1);
  // A store changed meanwhile (a migration to an indexed one): visibility answers again.
  indexed.mockResolvedValue(true);
  clock.t = 20 * 60_000;
  v.close('dispatch:acme:d', 'r');
  await expect(closes.watch('dispatch:acme:d', 'r', signal)).resolves.toBe(true);
  expect(v.list).toHaveBeenCalledTimes(1);
  expect(watchOne).toHaveBeenCalledTimes(3);
});

test('an indexed store is asked once per 10 minutes, not per call', async () => {
  const indexed = jest.fn(async () => true);
  const { v, closes, watchOne, clock, signal } = setup({ indexed });
  for (const k of ['a', 'b', 'c']) {
    v.close(`dispatch:acme:${k}`, 'r');
    await expect(closes.watch(`dispatch:acme:${k}`, 'r', signal)).resolves.toBe(true);
    clock.t += 1000;
  }
  expect(v.list).toHaveBeenCalledTimes(3);
  expect(indexed).toHaveBeenCalledTimes(1);
  clock.t = 10 * 60_000;
  v.close('dispatch:acme:d', 'r');
  await expect(closes.watch('dispatch:acme:d', 'r', signal)).resolves.toBe(true);
  expect(indexed).toHaveBeenCalledTimes(2);
  expect(watchOne).not.toHaveBeenCalled();
});

test('a store question that fails counts as a failed call: everything to the long poll, asked again later', async () => {
  const indexed = jest.fn(async (): Promise<boolean> => {
    throw grpcError(GRPC.UNAVAILABLE);
  });
  const { v, closes, watchOne, clock, warn, signal } = setup({ indexed });
  expect(await within(closes.watch('dispatch:acme:a', 'r', signal), 300)).toBe(true);
  expect(watchOne).toHaveBeenCalledTimes(1);
  expect(warn).toHaveBeenCalledTimes(1);
  expect(v.list).not.toHaveBeenCalled();
  indexed.mockResolvedValue(true);
  clock.t = 1000; // the first failure's 1 s
  v.close('dispatch:acme:b', 'r');
  await expect(closes.watch('dispatch:acme:b', 'r', signal)).resolves.toBe(true);
  expect(indexed).toHaveBeenCalledTimes(2);
  expect(watchOne).toHaveBeenCalledTimes(1);
});

test('a store question answered after close() hands nothing over and logs nothing', async () => {
  let answer!: (indexed: boolean) => void;
  const indexed = jest.fn(() => new Promise<boolean>((r) => (answer = r)));
  const { v, closes, watchOne, info } = setup({ indexed });
  const abort = new AbortController();
  const a = closes.watch('dispatch:acme:a', 'r', abort.signal);
  await tick();
  expect(indexed).toHaveBeenCalledTimes(1);
  closes.close();
  abort.abort(new Error('closing'));
  answer(false);
  await expect(a).rejects.toThrow('closing');
  await tick();
  expect(info).not.toHaveBeenCalled();
  expect(watchOne).not.toHaveBeenCalled();
  expect(v.list).not.toHaveBeenCalled();
});

test.each([
  ['sqlite', false],
  ['SQLite', false],
  ['postgres12', true],
  ['postgres12_pgx', true],
  ['mysql8', true],
  ['elasticsearch', true],
  ['', true],
])('the store %p answers from an index: %p', (store, indexed) => {
  expect(answersFromIndex(store)).toBe(indexed);
});

const deadlines: number[] = [];
function clientAnswering(getClusterInfo: () => Promise<{ visibilityStore?: string | null }>) {
  return {
    connection: {
      withDeadline: (deadline: number, fn: () => Promise<unknown>) => (
        deadlines.push(deadline - Date.now()),
        fn()
      ),
    },
    workflowService: { getClusterInfo },
  } as never;
}

test('GetClusterInfo names the store; a refusal is an unknown store; another failure rejects', async () => {
  await expect(visibilityIndexed(clientAnswering(async () => ({ visibilityStore: 'sqlite' })))).resolves.toBe(
    false,
  );
  await expect(
    visibilityIndexed(clientAnswering(async () => ({ visibilityStore: 'elasticsearch' }))),
  ).resolves.toBe(true);
  await expect(visibilityIndexed(clientAnswering(async () => ({})))).resolves.toBe(true);
  for (const code of [GRPC.PERMISSION_DENIED, GRPC.UNIMPLEMENTED]) {
    const refused = clientAnswering(async () => Promise.reject(grpcError(code)));
    await expect(visibilityIndexed(refused)).resolves.toBe(true);
  }
  const down = clientAnswering(async () => Promise.reject(grpcError(GRPC.UNAVAILABLE)));
  await expect(visibilityIndexed(down)).rejects.toThrow('code 14');
  const broken = clientAnswering(async () => Promise.reject(new Error('not a gRPC error')));
  await expect(visibilityIndexed(broken)).rejects.toThrow('not a gRPC error');
  // Every question has a deadline 2 s ahead: a frontend that never answers is a failed call, not a stuck poll.
  for (const ms of deadlines) expect(ms).toBeGreaterThan(1500);
  for (const ms of deadlines) expect(ms).toBeLessThanOrEqual(2000);
});
