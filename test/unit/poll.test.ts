/**
 * The one polling helper (src/poll.ts) that the dev stack, the tools and the tests wait through: a value once the
 * check holds, "no" (waitUntil) or an error naming what was awaited (waitFor) once the time is up, and the two
 * ways a throwing check is taken.
 */
import { poll, waitFor, waitUntil } from '../../src/poll';

/** A check that holds from its nth call on, counting its calls. */
function holdsFrom(n: number) {
  let calls = 0;
  return {
    check: () => (++calls >= n ? `held at call ${calls}` : undefined),
    calls: () => calls,
  };
}

describe('poll', () => {
  test('returns the first value other than undefined/false, checking again after each pause', async () => {
    const c = holdsFrom(3);
    await expect(poll(c.check, { timeoutMs: 5_000, intervalMs: 1 })).resolves.toEqual({
      done: true,
      value: 'held at call 3',
    });
    expect(c.calls()).toBe(3);
  });

  test('a check that never holds ends once the time is up, checked at least once', async () => {
    const c = holdsFrom(Number.POSITIVE_INFINITY);
    const polled = await poll(c.check, { timeoutMs: 30, intervalMs: 5 });
    expect(polled.done).toBe(false);
    expect(c.calls()).toBeGreaterThanOrEqual(2);
  });

  test('a throwing check ends the wait unless errors are retried; then the last one is kept', async () => {
    const failing = () => {
      throw new Error('broker not there yet');
    };
    await expect(poll(failing, { timeoutMs: 5_000 })).rejects.toThrow('broker not there yet');
    const polled = await poll(failing, { timeoutMs: 20, intervalMs: 5, retryErrors: true });
    expect(polled).toMatchObject({ done: false, lastError: new Error('broker not there yet') });
  });
});

describe('waitUntil and waitFor', () => {
  test('waitUntil answers true once the check holds, false when the time is up', async () => {
    await expect(waitUntil(() => false, 30, 5)).resolves.toBe(false);
    const c = holdsFrom(2);
    await expect(waitUntil(() => c.check() !== undefined, 5_000, 1)).resolves.toBe(true);
  });

  test('waitFor gives the value, or throws naming what it waited for and the last error', async () => {
    await expect(waitFor(holdsFrom(2).check, { intervalMs: 1 })).resolves.toBe('held at call 2');
    let calls = 0;
    await expect(
      waitFor(
        () => {
          if (++calls > 1) throw new Error('coordinator loading');
          return false;
        },
        { timeoutMs: 30, intervalMs: 5, what: 'the DLQ read to its end' },
      ),
    ).rejects.toThrow(
      'timed out after 30 ms waiting for the DLQ read to its end (last error: coordinator loading)',
    );
  });
});
