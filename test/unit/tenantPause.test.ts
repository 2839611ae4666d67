/**
 * A tenant's pause (contract §2, "Pausing a tenant"): the record the pause topic holds (src/contract/tenantPause.ts)
 * and what admission does with a paused tenant (src/ingest/admission.ts): it starts nothing, bounded or not, its
 * waiting partitions go on once it is resumed, and it takes no share from the others meanwhile. Real Kafka and
 * Temporal: it_tenant_pause.
 */
import { type TenantPause, decodeTenantPause, encodeTenantPause } from '../../src/contract';
import { TenantAdmission } from '../../src/ingest/admission';
import { pauseLine } from '../../src/ops/tenantPause';

const pause: TenantPause = {
  tenant: 'acme',
  paused: true,
  reason: 'API migration',
  at: '2026-12-06T05:00:00.000Z',
  by: 'ops@host',
};

describe('the pause record', () => {
  test('round-trips, keyed by its tenant', () => {
    expect(decodeTenantPause('acme', encodeTenantPause(pause))).toEqual(pause);
    const resumed = { ...pause, paused: false, reason: null, by: null };
    expect(decodeTenantPause('acme', encodeTenantPause(resumed))).toEqual(resumed);
  });

  test.each([
    [null, null, 'a record without a value or a tenant for its key'],
    ['Acme.x', null, 'a record without a value or a tenant for its key'],
    ['acme', 'paused', 'a value that is not JSON'],
    ['acme', 'null', 'a value that is not an object'],
    ['acme', '"paused"', 'a value that is not an object'],
    ['acme', '[1]', 'no valid tenant'],
    ['acme', JSON.stringify({ ...pause, tenant: 'Acme.x' }), 'no valid tenant'],
    ['beta', JSON.stringify(pause), 'a key ("beta") other than its tenant'],
    ['acme', JSON.stringify({ ...pause, paused: 'yes' }), 'no boolean "paused"'],
    ['acme', JSON.stringify({ ...pause, at: 'yesterday' }), 'no ISO time "at"'],
    ['acme', JSON.stringify({ ...pause, at: 12345 }), 'no ISO time "at"'], // Date.parse would take it
  ])('key %s, value %s: skipped (%s)', (key, value, why) => {
    expect(decodeTenantPause(key, value)).toBe(why);
  });

  test("a tombstone keyed by a tenant deletes the tenant's pause", () => {
    expect(decodeTenantPause('acme', null)).toEqual({ tenant: 'acme', deleted: true });
  });

  test('a reason or an author that is not text reads as none', () => {
    expect(decodeTenantPause('acme', JSON.stringify({ ...pause, reason: 42, by: {} }))).toEqual({
      ...pause,
      reason: null,
      by: null,
    });
  });

  test('a status line says since when, by whom and why', () => {
    expect(pauseLine(pause)).toBe(
      'acme                 paused since 2026-12-06T05:00:00.000Z by ops@host: API migration',
    );
    expect(pauseLine({ ...pause, paused: false, reason: null, by: null })).toBe(
      'acme                 resumed at 2026-12-06T05:00:00.000Z',
    );
  });
});

describe('admission of a paused tenant', () => {
  const paused = new Set<string>();
  beforeEach(() => paused.clear());
  const never = () => new Promise<void>(() => undefined);
  /** Admission with the default fair shares, told of the pauses in `paused`. */
  const fair = () =>
    new TenantAdmission({ maxOpen: 256, tenantMaxOpen: 0, watch: never, paused: (t) => paused.has(t) });

  test.each([
    ['fair shares (the default)', 256, 0],
    ['a fixed cap only', 0, 8],
    ['no bound at all', 0, 0],
  ])('with %s, a paused tenant takes no slot and the others are not held', (_, maxOpen, tenantMaxOpen) => {
    const a = new TenantAdmission({ maxOpen, tenantMaxOpen, watch: never, paused: (t) => paused.has(t) });
    paused.add('acme');
    expect(a.take('acme')).toBe(false);
    expect(a.openOf('acme')).toBe(0);
    expect(a.take('beta')).toBe(true);
    paused.delete('acme');
    expect(a.take('acme')).toBe(true);
  });

  test('its waiting partitions wait while it is paused and go on at once when it is resumed', () => {
    const a = fair();
    paused.add('acme');
    const resumed: string[] = [];
    a.whenRoom('acme', 'poimen.acme.dispatch/0', () => resumed.push('0'));
    a.whenRoom('acme', 'poimen.acme.dispatch/1', () => resumed.push('1'));
    a.wakeAll();
    expect(resumed).toEqual([]);
    paused.delete('acme');
    a.wakeAll();
    expect(resumed).toEqual(['0', '1']);
    a.close();
  });

  test.each([
    ['with nothing open', false],
    ['whose dispatches started before the pause are still open (retrying behind a failing API)', true],
  ])('a paused tenant %s takes no share: a tenant alone keeps the whole ingester', (_, open) => {
    const a = fair();
    const lone = a.limit('beta');
    if (open) {
      expect(a.take('acme')).toBe(true);
      a.holdUntilClosed('acme', 'wf-1', 'run-1');
    }
    paused.add('acme');
    expect(a.take('acme')).toBe(false);
    a.whenRoom('acme', 'poimen.acme.dispatch/0', () => undefined);
    expect(a.limit('beta')).toBe(lone);
    // Not paused, the same tenant would share the budget with beta.
    paused.delete('acme');
    expect(a.limit('beta')).toBeLessThan(lone);
    a.close();
  });

  test("a paused tenant's open dispatches (held by the workers for the whole pause) leave the cap to the others", () => {
    const cap = (paused_: boolean) => {
      const a = new TenantAdmission({
        maxOpen: 8,
        tenantMaxOpen: 0,
        watch: never,
        paused: (t) => paused.has(t),
      });
      // Two tenants behind a failing API fill the cap between them, with dispatches retrying.
      let n = 0;
      for (const t of ['acme', 'gamma']) while (a.take(t)) a.holdUntilClosed(t, `wf-${n}`, `run-${n++}`);
      if (paused_) ['acme', 'gamma'].forEach((t) => paused.add(t));
      let taken = 0;
      while (a.take('beta')) a.holdUntilClosed('beta', `wf-b${taken}`, `run-b${taken++}`);
      paused.clear();
      a.close();
      return { held: n, beta: taken };
    };
    const alone = new TenantAdmission({ maxOpen: 8, tenantMaxOpen: 0, watch: never });
    let lone = 0;
    while (alone.take('beta')) alone.holdUntilClosed('beta', `wf-${lone}`, `run-${lone++}`);
    alone.close();
    // Not paused, their open dispatches fill the cap; paused, beta takes what it would take alone.
    expect(cap(false).beta).toBeLessThan(lone);
    expect(cap(true).beta).toBe(lone);
  });

  test('tenants paused in turn keep the ingester within twice its cap', () => {
    const a = new TenantAdmission({
      maxOpen: 20,
      tenantMaxOpen: 0,
      watch: never,
      paused: (t) => paused.has(t),
    });
    let total = 0;
    for (const t of ['t1', 't2', 't3', 't4', 't5']) {
      while (a.take(t)) a.holdUntilClosed(t, `wf-${total}`, `run-${total++}`);
      paused.add(t);
    }
    expect(total).toBeGreaterThan(20);
    expect(total).toBeLessThanOrEqual(40);
    a.close();
  });

  test("a paused tenant holding most of the ingester's cap: another tenant waiting for room is resumed", () => {
    const a = fair();
    // acme alone behind a slow API fills its lone bound; its dispatches stay open (retrying) through the pause.
    let n = 0;
    while (a.take('acme')) a.holdUntilClosed('acme', `wf-${n}`, `run-${n++}`);
    paused.add('acme');
    let taken = 0;
    while (a.take('beta')) taken++;
    expect(taken).toBeGreaterThan(0);
    const resumed: string[] = [];
    a.whenRoom('beta', 'poimen.beta.dispatch/0', () => resumed.push('beta/0'));
    for (let i = 0; i < taken; i++) a.giveBack('beta'); // beta's records finish: its slots come back
    expect(resumed).toEqual(['beta/0']);
    a.close();
  });
});
