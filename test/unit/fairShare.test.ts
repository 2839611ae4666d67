/**
 * Fair shares of admission (src/ingest/admission.ts) and the budget they divide (src/ingest/openBudget.ts), on
 * a clock the test moves: a lone tenant has the whole ingester, tenants with work share the budget, a quiet
 * tenant's share goes back to the others, and the budget follows what the pipeline completes.
 */
import { ACTIVE_MS, TenantAdmission } from '../../src/ingest/admission';
import {
  BUDGET_FLOOR_PER_TENANT,
  BUDGET_HEADROOM,
  OpenBudget,
  SPARE_SLOTS,
} from '../../src/ingest/openBudget';

/** The budget two active tenants share before either has a pace. */
const BUDGET_FLOOR = 2 * BUDGET_FLOOR_PER_TENANT;
/** A lone tenant's bound: POIMEN_INGEST_MAX_OPEN less the slots kept for a newcomer. */
const LONE = 256 - 2 * BUDGET_FLOOR_PER_TENANT;
import { loadRelayConfig } from '../../src/config';

function clock(startMs = 1_000_000) {
  let t = startMs;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

/** An admission whose executions the test closes by hand (workflow id → close). */
function admission(maxOpen: number, tenantMaxOpen = 0) {
  const c = clock();
  const closers = new Map<string, () => void>();
  const a = new TenantAdmission({
    maxOpen,
    tenantMaxOpen,
    now: c.now,
    watch: (id) => new Promise<void>((resolve) => closers.set(id, resolve)),
  });
  let n = 0;
  /** Takes slots for `count` records of the tenant and starts an execution for each taken; returns how many. */
  const start = (tenant: string, count: number) => {
    let taken = 0;
    for (let i = 0; i < count && a.take(tenant); i++, taken++)
      a.holdUntilClosed(tenant, `${tenant}-${n++}`, 'r');
    return taken;
  };
  const close = async (prefix: string, count: number) => {
    const ids = [...closers.keys()].filter((k) => k.startsWith(`${prefix}-`)).slice(0, count);
    for (const id of ids) {
      closers.get(id)!();
      closers.delete(id);
    }
    await new Promise((r) => setImmediate(r));
  };
  return { a, c, start, close };
}

afterEach(() => jest.useRealTimers());

test('a lone tenant may keep the whole ingester open (POIMEN_INGEST_MAX_OPEN) but for the slots kept for a newcomer, not a share of it', () => {
  const { a, start } = admission(256);
  expect(start('a', 1000)).toBe(LONE);
  expect(a.limit('a')).toBe(LONE);
  // A newcomer finds room at once; the ingester's total stays within POIMEN_INGEST_MAX_OPEN whoever arrives.
  expect(start('b', 5)).toBe(BUDGET_FLOOR / 2);
  for (const t of ['c', 'd', 'e', 'f']) start(t, 5);
  expect(['a', 'b', 'c', 'd', 'e', 'f'].reduce((n, t) => n + a.openOf(t), 0)).toBe(256);
  a.close();
});

test('with a second tenant active, the budget is shared: the flooding tenant gets what the other leaves, the other its room at once', () => {
  const { a, start } = admission(256);
  expect(start('b', 1)).toBe(1); // B trickles: one open
  // A's share: the budget (a quiet relay's floor) less what B holds plus its spare slots, at least an equal half.
  const aShare = Math.max(BUDGET_FLOOR / 2, BUDGET_FLOOR - (1 + SPARE_SLOTS));
  expect(a.limit('a')).toBe(aShare);
  expect(start('a', 1000)).toBe(aShare);
  // B, active beside A, still has its equal half: its next record starts at once.
  expect(a.limit('b')).toBe(BUDGET_FLOOR / 2);
  expect(start('b', 3)).toBe(BUDGET_FLOOR / 2 - 1);
  a.close();
});

test("beside a quiet tenant on a fast pipeline (no pace above the floor), a flooding tenant keeps 1 open: the share the fairness bench measured nearest 2x of the quiet tenant's p99 alone on two cores (4 was past it)", async () => {
  const { a, close, start } = admission(256);
  start('b', 1);
  await close('b', 1);
  expect(start('a', 1000)).toBe(1);
  a.close();
});

test("beside a flooding tenant at the floor, a quiet tenant's record starts at once and a second of a burst waits for its first to close: the spare slots are not its own", async () => {
  const { a, close, start } = admission(256);
  expect(start('quiet', 1)).toBe(1);
  expect(start('flood', 1000)).toBe(1);
  expect(start('quiet', 1)).toBe(0);
  await close('quiet', 1);
  expect(start('quiet', 1)).toBe(1);
  a.close();
});

test('a tenant quiet for longer than the active window gives its share back; one with records is active again at once', async () => {
  const { a, c, start, close } = admission(256);
  start('b', 1);
  await close('b', 1);
  expect(a.limit('a')).toBe(Math.max(BUDGET_FLOOR / 2, BUDGET_FLOOR - SPARE_SLOTS)); // B recently seen, nothing open: its spare slots stay
  c.advance(ACTIVE_MS + 1);
  expect(a.limit('a')).toBe(LONE);
  a.take('b');
  expect(a.limit('a')).toBeLessThan(BUDGET_FLOOR);
  a.close();
});

test('with a small POIMEN_INGEST_MAX_OPEN a lone tenant keeps half of it, never less than a shared share', () => {
  for (const [maxOpen, lone] of [
    [1, 1],
    [2, 1],
    [3, 2],
    [4, 2],
    [8, 6],
    [16, 14],
  ] as const) {
    const { a, start } = admission(maxOpen);
    expect([maxOpen, start('a', 1000)]).toEqual([maxOpen, lone]);
    a.close();
  }
});

test("POIMEN_INGEST_TENANT_MAX_OPEN caps a share, even a lone tenant's", () => {
  const { a, start } = admission(256, 4);
  expect(start('a', 100)).toBe(4);
  a.close();
});

test('a waiting tenant resumes one partition per run of free slots (half its share), in turns', async () => {
  const { a, start, close } = admission(0, 8);
  start('a', 8);
  const resumed: string[] = [];
  for (const p of ['p0', 'p1', 'p2']) a.whenRoom('a', p, () => resumed.push(p));
  await close('a', 3);
  expect(resumed).toEqual([]); // 3 free: less than a run of 4
  await close('a', 1);
  expect(resumed).toEqual(['p0']); // 4 free: one partition fetches again for them, not three
  expect(start('a', 5)).toBe(4); // p0 takes its run and finds the tenant full again
  a.whenRoom('a', 'p0', () => resumed.push('p0 again')); // behind p1 and p2, which waited first
  await close('a', 4);
  expect(resumed).toEqual(['p0', 'p1']);
  await close('a', 4);
  expect(resumed).toEqual(['p0', 'p1', 'p2', 'p0 again']); // 8 free: two runs
  a.close();
});

test('a waiting tenant is resumed when another goes quiet, without any close', async () => {
  jest.useFakeTimers({ doNotFake: ['setImmediate'] });
  const { a, c, start, close } = admission(256);
  start('b', 1);
  await close('b', 1);
  expect(start('a', 1000)).toBe(Math.max(BUDGET_FLOOR / 2, BUDGET_FLOOR - SPARE_SLOTS));
  let resumed = false;
  a.whenRoom('a', 'p0', () => (resumed = true));
  jest.advanceTimersByTime(1000);
  expect(resumed).toBe(false); // B was seen within the window: its spare slots stay its own
  c.advance(ACTIVE_MS + 1);
  jest.advanceTimersByTime(1000);
  expect(resumed).toBe(true); // B quiet: A alone, with the whole ingester
  a.close();
});

test("a tenant's pace needs what Little's law says, with headroom: closes per second times its shortest open time", () => {
  const c = clock();
  const b = new OpenBudget(c.now);
  expect(b.needed()).toBe(0);
  // 50 closes a second, each open 200 ms at the least: 10 open keep that pace.
  for (let s = 0; s < 5; s++) {
    for (let i = 0; i < 50; i++) b.closed(i === 0 ? 200 : 400);
    c.advance(1000);
  }
  c.advance(-1); // still within the last five seconds' buckets
  expect(b.rate()).toBe(50);
  expect(b.shortestOpenMs()).toBe(200);
  expect(b.needed()).toBe(Math.ceil(BUDGET_HEADROOM * 50 * 0.2));
});

test('a pace forgets a pipeline that went quiet: no closes for the rate window, no open time after two windows', () => {
  const c = clock();
  const b = new OpenBudget(c.now);
  for (let i = 0; i < 100; i++) b.closed(50);
  c.advance(6000);
  expect(b.rate()).toBe(0);
  expect(b.needed()).toBe(0);
  c.advance(30_000);
  expect(b.shortestOpenMs()).toBeUndefined();
});

test("a tenant behind a slow API keeps the budget its pace needs beside a fast tenant's trickle, and the sum stays within POIMEN_INGEST_MAX_OPEN", async () => {
  const { a, c, start, close } = admission(256);
  // B's API answers in 2 s: 40 closes over 2 s, each open 2 s, need 2 × 20/s × 2 s = 80 open.
  start('b', 40);
  c.advance(2000);
  await close('b', 40);
  start('a', 1); // A trickles; its calls are fast
  c.advance(50);
  await close('a', 1);
  a.take('a');
  expect(a.limit('b')).toBeGreaterThanOrEqual(Math.ceil(BUDGET_HEADROOM * 8 * 2) - (1 + SPARE_SLOTS));
  a.close();
});

test('an execution gone past retention when its close is asked for measures no pace', async () => {
  const c = clock();
  const a = new TenantAdmission({ maxOpen: 256, tenantMaxOpen: 0, now: c.now, watch: async () => false });
  a.take('b');
  a.holdUntilClosed('b', 'w', 'r');
  await new Promise((r) => setImmediate(r));
  a.take('a');
  expect(a.limit('a')).toBe(Math.max(BUDGET_FLOOR / 2, BUDGET_FLOOR - SPARE_SLOTS)); // the floor: no pace of B's
  a.close();
});

test('POIMEN_INGEST_MAX_OPEN: 256 by default, 0 turns fair shares off; a bad value fails the start naming it', () => {
  expect(loadRelayConfig('ingester', {}).ingest.maxOpen).toBe(256);
  expect(loadRelayConfig('ingester', { POIMEN_INGEST_MAX_OPEN: '0' }).ingest.maxOpen).toBe(0);
  expect(() => loadRelayConfig('ingester', { POIMEN_INGEST_MAX_OPEN: 'many' })).toThrow(
    /POIMEN_INGEST_MAX_OPEN/,
  );
});
