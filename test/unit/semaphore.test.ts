import { Semaphore } from '../../src/ingest/semaphore';

/** Lets every already-resolved promise continuation run. */
const settle = () => new Promise((r) => setImmediate(r));

describe('the ingester’s in-flight bound (count and bytes)', () => {
  it('admits at most `permits` records at once', async () => {
    const s = new Semaphore(2);
    const got: number[] = [];
    for (const i of [1, 2, 3]) void s.acquire().then(() => got.push(i));
    await settle();
    expect(got).toEqual([1, 2]);
    s.release();
    await settle();
    expect(got).toEqual([1, 2, 3]);
  });

  it('admits records while their bytes fit the budget, and more as bytes come back', async () => {
    const s = new Semaphore(100, 1000);
    const got: string[] = [];
    const weights: Record<string, number> = {};
    for (const [name, bytes] of [
      ['a', 600],
      ['b', 300],
      ['c', 200],
    ] as const) {
      void s.acquire(bytes).then((w) => {
        weights[name] = w;
        got.push(name);
      });
    }
    await settle();
    expect(got).toEqual(['a', 'b']);
    s.release(weights.a);
    await settle();
    expect(got).toEqual(['a', 'b', 'c']);
  });

  it('runs a record larger than the whole budget, alone', async () => {
    const s = new Semaphore(100, 1000);
    const got: string[] = [];
    const small = await s.acquire(10);
    void s.acquire(5000).then((w) => {
      expect(w).toBe(1000);
      got.push('huge');
    });
    void s.acquire(10).then(() => got.push('after'));
    await settle();
    expect(got).toEqual([]);
    s.release(small);
    await settle();
    // In order: the small record behind the huge one waits for it, so the huge one is not starved.
    expect(got).toEqual(['huge']);
    s.release(1000);
    await settle();
    expect(got).toEqual(['huge', 'after']);
  });
});
