/**
 * Which watch admission (src/ingest/admission.ts) gives a dispatch: the lone watch (closes seen late but cheaply,
 * src/temporal/visibilityCloses.ts) only for a tenant alone with a large bound and no fixed cap; the precise one
 * otherwise, the lone one's pending sharpened the moment another tenant's dispatch starts; and closes seen late
 * never shrink or grow the budget the tenants share next. On a clock the test moves.
 */
import { ACTIVE_MS, COARSE_MIN_LIMIT, TenantAdmission } from '../../src/ingest/admission';
import { WatchChoice } from '../../src/ingest/closeWatch';
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
      close: () => undefined,
      seesLate: () => true,
    },
  };
}

/**
 * An admission whose executions close `openMs` after their start, seen then by the precise watch and `lateMs`
 * later by the lone one (none when `lone` is false); `run` starts `perSecond` of the tenant's for `seconds`.
 */
function scheduled(opts: { lone: boolean; openMs: number; lateMs: number }) {
  const c = clock();
  let budget = 0;
  let started = 0;
  const resolvers = new Map<string, () => void>();
  const precise: string[] = [];
  const coarse: string[] = [];
  const a = new TenantAdmission({
    maxOpen: 256,
    tenantMaxOpen: 0,
    now: c.now,
    budgetGauge: { set: (v: number) => (budget = v) } as never,
    watch: (id) => (
      precise.push(id),
      new Promise<void>((resolve) => resolvers.set(`precise ${id}`, resolve))
    ),
    ...(opts.lone
      ? {
          lone: {
            watch: (id: string) => (
              coarse.push(id),
              new Promise<boolean>((resolve) => resolvers.set(`lone ${id}`, () => resolve(true)))
            ),
            sharpen: () => undefined,
            close: () => undefined,
            seesLate: () => true,
          },
        }
      : {}),
  });
  const run = async (tenant: string, perSecond: number, seconds: number) => {
    const events: [number, () => void][] = [];
    const t0 = c.now();
    const gap = 1000 / perSecond;
    for (let i = 0; i < perSecond * seconds; i++) {
      const id = `${tenant}-${t0}-${i}`;
      const at = t0 + i * gap;
      events.push([at, () => a.take(tenant) && (started++, a.holdUntilClosed(tenant, id, 'r'))]);
      events.push([at + opts.openMs, () => resolvers.get(`precise ${id}`)?.()]);
      events.push([at + opts.openMs + opts.lateMs, () => resolvers.get(`lone ${id}`)?.()]);
    }
    events.sort((x, y) => x[0] - y[0]);
    for (const [at, go] of events) {
      c.advance(at - c.now());
      go();
      await new Promise((r) => setImmediate(r));
    }
  };
  /** The budget as a second tenant arrives. */
  const budgetWhenAnotherArrives = () => {
    a.take('beta');
    a.limit('acme');
    return budget;
  };
  return { a, c, run, precise, coarse, budgetWhenAnotherArrives, started: () => started };
}

test("a tenant alone is watched by the lone watch but for one precise sample a second; once another tenant is active, precisely, and the lone one's pending are sharpened", () => {
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
  for (const id of ['acme-0', 'acme-1', 'acme-2']) {
    a.take('acme');
    a.holdUntilClosed('acme', id, 'r');
  }
  c.advance(1000);
  a.take('acme');
  a.holdUntilClosed('acme', 'acme-3', 'r');
  expect(precise).toEqual(['acme-0', 'acme-3']);
  expect(l.watched).toEqual(['acme-1', 'acme-2']);
  expect(l.sharpened).not.toHaveBeenCalled();
  a.take('beta'); // beta has a record here: acme is no longer alone
  a.holdUntilClosed('acme', 'acme-4', 'r');
  a.holdUntilClosed('acme', 'acme-5', 'r');
  expect(l.sharpened).toHaveBeenCalledTimes(1);
  a.giveBack('beta'); // beta's record started nothing
  c.advance(ACTIVE_MS + 1); // and beta has gone quiet: acme is alone again
  for (const id of ['acme-6', 'acme-7']) {
    a.take('acme');
    a.holdUntilClosed('acme', id, 'r');
  }
  expect(l.watched).toEqual(['acme-1', 'acme-2', 'acme-7']);
  expect(precise).toEqual(['acme-0', 'acme-3', 'acme-4', 'acme-5', 'acme-6']);
  expect(l.sharpened).toHaveBeenCalledTimes(1);
  a.close();
});

test.each([
  ['a fixed cap (POIMEN_INGEST_TENANT_MAX_OPEN)', 256, 4],
  ['a fixed cap of 64 or more', 256, 100],
  ['no fair shares', 0, 4],
  [`a lone bound below ${COARSE_MIN_LIMIT}`, COARSE_MIN_LIMIT + 2 * BUDGET_FLOOR_PER_TENANT - 1, 0],
])(
  'with %s a lone tenant keeps the precise watch (a close seen late would be its own lost turn)',
  (_why, maxOpen, cap) => {
    const c = clock();
    const precise: string[] = [];
    const l = loneWatch();
    const a = new TenantAdmission({
      maxOpen,
      tenantMaxOpen: cap,
      now: c.now,
      watch: (id) => (precise.push(id), new Promise<void>(() => undefined)),
      lone: l.lone,
    });
    for (const id of ['acme-1', 'acme-2']) {
      a.take('acme');
      a.holdUntilClosed('acme', id, 'r');
    }
    expect(precise).toEqual(['acme-1', 'acme-2']);
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
  for (const id of ['acme-sample', 'acme-1']) {
    a.take('acme');
    a.holdUntilClosed('acme', id, 'r');
  }
  expect(l.watched).toEqual(['acme-1']);
  a.close();
});

test('a lone tenant at its bound (a slow API) is not slowed by closes seen late: its pace turns the lone watch off', async () => {
  // Offered 150 a second, each open 2 s: the 250 slots a lone tenant may keep allow 125 a second seen at once,
  // 100 seen 0.5 s late.
  const precise = scheduled({ lone: false, openMs: 2000, lateMs: 500 });
  await precise.run('acme', 150, 20);
  const late = scheduled({ lone: true, openMs: 2000, lateMs: 500 });
  await late.run('acme', 150, 20);
  expect(late.coarse.length).toBeGreaterThan(0); // before its pace was known
  expect(late.started()).toBeGreaterThanOrEqual(0.95 * precise.started());
  precise.a.close();
  late.a.close();
});

test("a lone tenant's closes seen late neither shrink nor grow the budget it shares when another tenant arrives", async () => {
  // 50 a second, each open 200 ms: its pace needs 2·50·0.2 = 20.
  const precise = scheduled({ lone: false, openMs: 200, lateMs: 1000 });
  await precise.run('acme', 50, 40);
  const expected = precise.budgetWhenAnotherArrives();
  expect(expected).toBeGreaterThan(2 * BUDGET_FLOOR_PER_TENANT); // above the floor: the pace decides it
  const late = scheduled({ lone: true, openMs: 200, lateMs: 1000 });
  await late.run('acme', 50, 40);
  expect(late.coarse.length).toBeGreaterThan(1500);
  // Not the floor (no open time known) nor a multiple of it (the late open times counted).
  const budget = late.budgetWhenAnotherArrives();
  expect(budget).toBeGreaterThanOrEqual(Math.floor(expected * 0.75));
  expect(budget).toBeLessThanOrEqual(Math.ceil(expected * 1.5));
  precise.a.close();
  late.a.close();
});

test('a lone watch that bypasses visibility (a store that scans, an outage) sees closes at once: not counted as late', async () => {
  let bypassing = true;
  const lone = {
    watch: async () => true,
    sharpen: () => undefined,
    close: () => undefined,
    seesLate: () => !bypassing,
  };
  const c = clock();
  const choice = new WatchChoice({ precise: async () => true, lone, now: c.now, mayBeLate: () => true });
  const sample = choice.forDispatch('acme'); // the precise sample of this second
  await sample.watch('a', 'r', new AbortController().signal);
  const bypassed = choice.forDispatch('acme');
  await bypassed.watch('b', 'r', new AbortController().signal);
  expect(bypassed.seenLate()).toBe(false);
  bypassing = false;
  const late = choice.forDispatch('acme');
  await late.watch('c', 'r', new AbortController().signal);
  expect(late.seenLate()).toBe(true);
});
