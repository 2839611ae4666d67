/**
 * What the lone watch (src/temporal/visibilityCloses.ts) does when visibility cannot answer: a failed or refused
 * call, an id it cannot quote, admission's `sharpen`, close(): each watch goes to the per-execution watch at once,
 * counted as such, with one line per outage. On the fake List of test/support/visibilityFake.ts.
 */
import { GRPC } from '../../src/temporal/grpcStatus';
import { grpcError, setup, tick, within } from '../support/visibilityFake';

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

test('watches that bypass visibility (after a refusal, an unquotable id) are counted as long polls too', async () => {
  const { v, closes, counts, signal } = setup();
  v.fail = grpcError(GRPC.INVALID_ARGUMENT);
  await closes.watch('dispatch:acme:a', 'r', signal);
  for (let i = 0; i < 3; i++) await closes.watch(`dispatch:acme:b${i}`, 'r', signal);
  await closes.watch("dispatch:acme:it's", 'r', signal);
  expect(await counts()).toEqual({ long_poll: 5 });
});

test('a poll with nothing left to ask (all sharpened meanwhile) does not end an outage early', async () => {
  const { v, closes, clock, warn, signal } = setup();
  v.fail = grpcError(GRPC.UNAVAILABLE);
  await closes.watch('dispatch:acme:a', 'r', signal); // fails: bypass for 1 s
  clock.t = 1000;
  void closes.watch('dispatch:acme:b', 'r', signal);
  closes.sharpen(); // before its poll: that poll asks nothing
  await tick();
  clock.t = 2000;
  await closes.watch('dispatch:acme:c', 'r', signal); // fails again: the second in a row, not logged
  expect(v.list).toHaveBeenCalledTimes(2);
  expect(warn).toHaveBeenCalledTimes(1);
  clock.t = 3500; // bypassed for 2 s after the second failure
  await closes.watch('dispatch:acme:d', 'r', signal);
  expect(v.list).toHaveBeenCalledTimes(2);
});

test('after close() no List call is made and a call in flight that fails is not logged', async () => {
  const { v, closes, watchOne, warn, signal } = setup();
  v.delayMs = 50;
  v.fail = grpcError(GRPC.UNAVAILABLE);
  const abort = new AbortController();
  const a = closes.watch('dispatch:acme:a', 'r', abort.signal);
  await tick(20); // its call is in flight
  closes.close();
  abort.abort(new Error('closing'));
  await expect(a).rejects.toThrow('closing');
  await tick(80);
  expect(warn).not.toHaveBeenCalled();
  await expect(closes.watch('dispatch:acme:b', 'r', signal)).resolves.toBe(true);
  expect(watchOne).toHaveBeenCalledTimes(1);
  await tick();
  expect(v.list).toHaveBeenCalledTimes(1);
});
