/**
 * The lone watch (src/temporal/visibilityCloses.ts) over long and odd outages of visibility: a List outage that
 * outlasts the store's verdict stays one outage; a store question that fails oddly is asked again; a call given up
 * at the local limit is not joined by a second; a store refused for the process never reopens the lone watch; and
 * `answered` (closedRuns.ts) gives up after 5 s by default without leaving a rejection unhandled.
 */
import { WatchChoice } from '../../src/ingest/closeWatch';
import { answered } from '../../src/temporal/closedRuns';
import { GRPC } from '../../src/temporal/grpcStatus';
import { visibilityStore } from '../../src/temporal/visibilityStore';
import { grpcError, setup, tick, within } from '../support/visibilityFake';

const POSTGRES = { indexed: true, store: 'postgres12' };

function client(getClusterInfo: () => Promise<{ visibilityStore?: string | null }>) {
  const c = {
    connection: { withDeadline: (_d: number, fn: () => Promise<unknown>) => fn() },
    workflowService: { getClusterInfo: jest.fn(getClusterInfo) },
  };
  return { ask: visibilityStore(c as never), calls: c.workflowService.getClusterInfo };
}

test('a List outage that outlasts the store verdict stays one outage: one warning, backing off to the minute', async () => {
  const store = jest.fn(async () => POSTGRES);
  const { v, closes, clock, warn, signal } = setup({ store });
  v.fail = grpcError(GRPC.UNAVAILABLE);
  for (let t = 0; t <= 11 * 60_000; t += 60_000) {
    clock.t = t;
    expect(await within(closes.watch(`dispatch:acme:${t}`, 'r', signal), 300)).toBe(true);
  }
  expect(store).toHaveBeenCalledTimes(2); // asked again at 10 minutes: indexed, which ends no List outage
  expect(warn).toHaveBeenCalledTimes(1);
  clock.t += 5000; // twelve failures in a row: bypassed for the full minute, not 2 s
  expect(closes.seesLate()).toBe(false);
});

test.each([
  ['UNKNOWN', 2],
  ['INTERNAL', 13],
  ['UNAUTHENTICATED', GRPC.UNAUTHENTICATED],
  ['NOT_FOUND', GRPC.NOT_FOUND],
])(
  'a GetClusterInfo failing with %s (code %d) is a failed call, asked again, not remembered',
  async (_n, code) => {
    let fail = true;
    const c = client(async () =>
      fail ? Promise.reject(grpcError(code)) : { visibilityStore: 'postgres12' },
    );
    await expect(c.ask()).rejects.toThrow(`code ${code}`);
    fail = false;
    await expect(c.ask()).resolves.toEqual(POSTGRES);
    expect(c.calls).toHaveBeenCalledTimes(2);
  },
);

test('a List call given up at the local limit is not joined by another while it is still running', async () => {
  let outstanding = 0;
  let most = 0;
  let finish!: () => void;
  const list = jest.fn(() => {
    most = Math.max(most, ++outstanding);
    return new Promise<never>((_, reject) => (finish = () => (outstanding--, reject(new Error('late')))));
  });
  const { closes, clock, warn, signal } = setup({ list, callLimitMs: 30 });
  expect(await within(closes.watch('dispatch:acme:a', 'r', signal), 400)).toBe(true);
  clock.t = 1000; // past the first failure's bypass
  expect(await within(closes.watch('dispatch:acme:b', 'r', signal), 400)).toBe(true);
  expect(list).toHaveBeenCalledTimes(1);
  expect(most).toBe(1);
  expect(warn).toHaveBeenCalledTimes(1); // the second in a row is not logged
  // Once the call given up has ended, the next poll asks again.
  finish();
  await tick();
  clock.t = 10_000;
  void closes.watch('dispatch:acme:c', 'r', signal);
  for (let i = 0; i < 50 && list.mock.calls.length < 2; i++) await tick(10);
  expect(list).toHaveBeenCalledTimes(2);
});

test('a store refused for the process keeps every watch on the long poll: the lone watch never reopens', async () => {
  const c = client(async () => Promise.reject(grpcError(GRPC.PERMISSION_DENIED)));
  const { v, closes, clock, watchOne, info, signal } = setup({ store: c.ask });
  expect(await within(closes.watch('dispatch:acme:a', 'r', signal), 300)).toBe(true);
  expect(info.mock.calls[0][0]).toEqual({ store: 'unknown (GetClusterInfo: PERMISSION_DENIED)' });
  clock.t = 24 * 60 * 60_000;
  expect(closes.seesLate()).toBe(false);
  expect(await within(closes.watch('dispatch:acme:b', 'r', signal), 5)).toBe(true); // at once, not after a poll
  expect(v.list).not.toHaveBeenCalled();
  expect(c.calls).toHaveBeenCalledTimes(1);
  expect(watchOne).toHaveBeenCalledTimes(2);
});

test('a retry on the precise watch after a lone attempt counts its close as seen at once', async () => {
  let now = 0;
  const lone = {
    watch: async () => Promise.reject(new Error('visibility down')),
    sharpen: () => undefined,
    close: () => undefined,
    seesLate: () => true,
  };
  let alone = true;
  const choice = new WatchChoice({ precise: async () => true, lone, now: () => now, mayBeLate: () => alone });
  await choice.forDispatch('acme').watch('s', 'r', new AbortController().signal); // this second's sample
  const d = choice.forDispatch('acme');
  await expect(d.watch('a', 'r', new AbortController().signal)).rejects.toThrow('visibility down');
  expect(d.seenLate()).toBe(true);
  alone = false; // another tenant arrived: the retry goes to the precise watch
  now = 10;
  await d.watch('a', 'r', new AbortController().signal);
  expect(d.seenLate()).toBe(false);
});

test('a call that rejects after the local limit leaves no unhandled rejection', async () => {
  const unhandled: unknown[] = [];
  const on = (r: unknown) => unhandled.push(r);
  process.on('unhandledRejection', on);
  try {
    let reject!: (e: Error) => void;
    const call = new Promise<never>((_, r) => (reject = r));
    await expect(answered(call, 20)).rejects.toThrow(/did not answer within 20 ms/);
    reject(new Error('late'));
    await tick(50);
    expect(unhandled).toEqual([]);
  } finally {
    process.off('unhandledRejection', on);
  }
});

test('a call is given up after 5 s by default, not before', async () => {
  jest.useFakeTimers();
  try {
    let settled: unknown = 'pending';
    void answered(new Promise<never>(() => undefined)).catch((e: Error) => (settled = e.message));
    await jest.advanceTimersByTimeAsync(4999);
    expect(settled).toBe('pending');
    await jest.advanceTimersByTimeAsync(1);
    expect(settled).toMatch(/within 5000 ms/);
  } finally {
    jest.useRealTimers();
  }
});
