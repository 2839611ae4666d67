/**
 * Which watch admission (src/ingest/admission.ts) gives a dispatch: the lone watch (closes seen late but cheaply,
 * src/temporal/visibilityCloses.ts) only for a tenant alone with a large bound and no fixed cap; the precise one
 * otherwise, the lone one's pending sharpened the moment another tenant's dispatch starts; and closes seen late
 * never shrink or grow the budget the tenants share next. On a clock the test moves.
 */
import { ACTIVE_MS, COARSE_MIN_LIMIT, TenantAdmission } from '../../src/ingest/admission';
import { BUDGET_FLOOR_PER_TENANT } from '../../src/ingest/openBudget';

function clock(startMs = 1_000_000) {
  let t = startMs;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

/** A lone watch that records what it was given and what was sharpened; its watches never end. */
function loneWatch() {
  const watched: string[] = [];
  const sharpened = jest.fn();
  return {
    watched,
    sharpened,
    lone: {
      watch: (id: string) => (watched.push(id), new Promise<boolean>(() => undefined)),
      sharpen: sharpened,
    },
  };
}

test("a tenant alone is watched by the lone watch; once another tenant is active, precisely, and the lone one's pending are sharpened", () => {
  const c = clock();
  const precise: string[] = [];
  const l = loneWatch();
  const a = new TenantAdmission({
    maxOpen: 256,
    tenantMaxOpen: 0,
    now: c.now,
    watch: (id) => (precise.push(id), new Promise<void>(() => undefined)),
    lone: l.lone,
  });
  a.take('acme');
  a.holdUntilClosed('acme', 'acme-1', 'r');
  expect(l.sharpened).not.toHaveBeenCalled();
  a.take('beta'); // beta has a record here: acme is no longer alone
  a.holdUntilClosed('acme', 'acme-2', 'r');
  expect(l.sharpened).toHaveBeenCalledTimes(1);
  a.giveBack('beta'); // beta's record started nothing
  c.advance(ACTIVE_MS + 1); // and beta has gone quiet: acme is alone again
  a.take('acme');
  a.holdUntilClosed('acme', 'acme-3', 'r');
  expect(l.watched).toEqual(['acme-1', 'acme-3']);
  expect(precise).toEqual(['acme-2']);
  expect(l.sharpened).toHaveBeenCalledTimes(1);
  a.close();
});

test.each([
  ['a fixed cap (POIMEN_INGEST_TENANT_MAX_OPEN)', 256, 4],
  ['no fair shares', 0, 4],
  [`a lone bound below ${COARSE_MIN_LIMIT}`, COARSE_MIN_LIMIT + 2 * BUDGET_FLOOR_PER_TENANT - 1, 0],
])(
  'with %s a lone tenant keeps the precise watch (a close seen late would be its own lost turn)',
  (_why, maxOpen, cap) => {
    const precise: string[] = [];
    const l = loneWatch();
    const a = new TenantAdmission({
      maxOpen,
      tenantMaxOpen: cap,
      watch: (id) => (precise.push(id), new Promise<void>(() => undefined)),
      lone: l.lone,
    });
    a.take('acme');
    a.holdUntilClosed('acme', 'acme-1', 'r');
    expect(precise).toEqual(['acme-1']);
    expect(l.watched).toEqual([]);
    a.close();
  },
);

test(`at a lone bound of ${COARSE_MIN_LIMIT} the lone watch is used`, () => {
  const l = loneWatch();
  const a = new TenantAdmission({
    maxOpen: COARSE_MIN_LIMIT + 2 * BUDGET_FLOOR_PER_TENANT,
    tenantMaxOpen: 0,
    watch: () => new Promise<void>(() => undefined),
    lone: l.lone,
  });
  a.take('acme');
  a.holdUntilClosed('acme', 'acme-1', 'r');
  expect(l.watched).toEqual(['acme-1']);
  a.close();
});

test("a lone tenant's closes seen late count for its rate, not its open time: the budget it shares next is the precise one's", async () => {
  async function budgetAfterAlone(lateMs: number): Promise<number> {
    const c = clock();
    let budget = 0;
    const closers = new Map<string, () => void>();
    const a = new TenantAdmission({
      maxOpen: 256,
      tenantMaxOpen: 0,
      now: c.now,
      budgetGauge: { set: (v: number) => (budget = v) } as never,
      watch: (id) => new Promise<void>((resolve) => closers.set(id, resolve)),
      lone: {
        watch: (id) => new Promise<boolean>((resolve) => closers.set(id, () => resolve(true))),
        sharpen: () => undefined,
      },
    });
    // A precise close first (100 ms open), then 5 s alone: 50 a second, each open 40 ms, seen `lateMs` later.
    a.take('acme');
    a.take('beta');
    a.giveBack('beta'); // beta's record started nothing
    a.holdUntilClosed('acme', 'first', 'r');
    c.advance(100);
    closers.get('first')!();
    await Promise.resolve();
    c.advance(ACTIVE_MS + 1);
    const events: [number, () => void][] = [];
    const t0 = c.now();
    for (let i = 0; i < 250; i++) {
      events.push([t0 + i * 20, () => (a.take('acme'), a.holdUntilClosed('acme', `acme-${i}`, 'r'))]);
      events.push([t0 + i * 20 + 40 + lateMs, () => closers.get(`acme-${i}`)!()]);
    }
    events.sort((x, y) => x[0] - y[0]);
    for (const [at, run] of events) {
      c.advance(at - c.now());
      run();
      await new Promise((r) => setImmediate(r));
    }
    a.take('beta');
    a.limit('acme'); // computes the shares, sets the gauge
    a.close();
    return budget;
  }
  expect(await budgetAfterAlone(1000)).toBe(await budgetAfterAlone(0));
});
