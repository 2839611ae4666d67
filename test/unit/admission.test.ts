/**
 * Admission per tenant (src/ingest/admission.ts): a tenant's open dispatches stay within POIMEN_INGEST_TENANT_MAX_OPEN,
 * a full tenant's partition waits paused and its rest stays in Kafka, and the other tenants are not held. The
 * consumer is a recording stub and the start (`handleRecord`) a stub that reports each record's execution; the
 * watch for an execution's close is a deferred the test resolves. Real Kafka and Temporal: it_fairness.
 */
import { loadRelayConfig } from '../../src/config';
import { TenantAdmission } from '../../src/ingest/admission';
import { handleRecord } from '../../src/ingest/startDispatch';
import { waitFor } from '../support/wait';
import { batchPayload, boundIngester, watches } from '../support/admissionRig';

jest.mock('../../src/ingest/startDispatch', () => ({ handleRecord: jest.fn() }));
const handle = handleRecord as jest.MockedFunction<typeof handleRecord>;

beforeEach(() => handle.mockReset());

test('a tenant takes at most its bound; a record that started nothing gives its slot back at once', () => {
  const a = new TenantAdmission({ maxOpen: 0, tenantMaxOpen: 2, watch: () => new Promise(() => undefined) });
  expect([a.take('acme'), a.take('acme'), a.take('acme')]).toEqual([true, true, false]);
  expect(a.take('beta')).toBe(true); // another tenant has its own bound
  a.giveBack('acme');
  expect(a.take('acme')).toBe(true);
  expect(a.openOf('acme')).toBe(2);
});

test('without a bound every record is admitted and nothing is watched', () => {
  const watch = jest.fn(() => Promise.resolve());
  const a = new TenantAdmission({ maxOpen: 0, tenantMaxOpen: 0, watch });
  for (let i = 0; i < 1000; i++) expect(a.take('acme')).toBe(true);
  a.holdUntilClosed('acme', 'w', 'r');
  expect(watch).not.toHaveBeenCalled();
});

test('a started execution holds its slot until it closes; a full tenant is woken only once half its bound is free', async () => {
  const w = watches();
  const a = new TenantAdmission({ maxOpen: 0, tenantMaxOpen: 8, watch: w.watch });
  const woken = jest.fn();
  for (let i = 1; i <= 8; i++) {
    expect(a.take('acme')).toBe(true);
    a.holdUntilClosed('acme', `w${i}`, 'run');
  }
  expect(a.take('acme')).toBe(false);
  a.whenRoom('acme', 'poimen.acme.dispatch/0', woken);
  for (const id of ['w1', 'w2', 'w3']) w.close(id);
  await waitFor(() => a.openOf('acme') === 5);
  expect(woken).not.toHaveBeenCalled(); // three slots free are not yet half of 8
  w.close('w4');
  await waitFor(() => a.openOf('acme') === 4);
  expect(woken).toHaveBeenCalledTimes(1); // 8 − 8/2 = 4 open: room again
  a.close();
});

test('a record that joins an execution already counted (a redelivery) takes no second slot', async () => {
  const w = watches();
  const a = new TenantAdmission({ maxOpen: 0, tenantMaxOpen: 2, watch: w.watch });
  a.take('acme');
  a.holdUntilClosed('acme', 'dispatch:acme:d-1', 'run-1');
  a.take('acme');
  a.holdUntilClosed('acme', 'dispatch:acme:d-1', 'run-1');
  expect(a.openOf('acme')).toBe(1);
  expect(w.open.size).toBe(1);
  w.close('dispatch:acme:d-1');
  await waitFor(() => a.openOf('acme') === 0);
  a.close();
});

test('a partition that pauses again before it was resumed keeps one waiter; a resume that throws does not keep the others paused', async () => {
  const w = watches();
  const a = new TenantAdmission({ maxOpen: 0, tenantMaxOpen: 1, watch: w.watch });
  a.take('acme');
  a.holdUntilClosed('acme', 'w1', 'run');
  const resumed: string[] = [];
  a.whenRoom('acme', 'p0', () => resumed.push('p0 first'));
  a.whenRoom('acme', 'p0', () => resumed.push('p0'));
  a.whenRoom('acme', 'p1', () => {
    throw new Error('Consumer group was not initialized');
  });
  a.whenRoom('acme', 'p2', () => resumed.push('p2'));
  w.close('w1');
  // One slot free: one partition resumed, the one that throws passing its turn on; the third waits its own turn.
  await waitFor(() => resumed.length === 2);
  expect(resumed).toEqual(['p0', 'p2']);
  // A wait that finds room at once is resumed at once, and a resume that throws there does not escape either.
  const b = new TenantAdmission({ maxOpen: 0, tenantMaxOpen: 1, watch: w.watch });
  expect(() =>
    b.whenRoom('acme', 'p0', () => {
      throw new Error('Consumer group was not initialized');
    }),
  ).not.toThrow();
  b.whenRoom('acme', 'p1', () => resumed.push('p1 at once'));
  expect(resumed).toEqual(['p0', 'p2', 'p1 at once']);
  a.close();
  b.close();
});

test('a watch that fails (Temporal unreachable) is asked again: the slot stays held until the close is seen', async () => {
  let calls = 0;
  let closeIt!: () => void;
  const a = new TenantAdmission({
    maxOpen: 0,
    tenantMaxOpen: 1,
    watch: () => {
      calls++;
      if (calls === 1) return Promise.reject(new Error('UNAVAILABLE'));
      return new Promise<void>((r) => (closeIt = r));
    },
  });
  a.take('acme');
  a.holdUntilClosed('acme', 'w1', 'run');
  await waitFor(() => calls === 2, { timeoutMs: 5000, what: 'the watch asked again' });
  expect(a.openOf('acme')).toBe(1);
  closeIt();
  await waitFor(() => a.openOf('acme') === 0);
});

test('close() ends every watch (their slots come back) and asks nothing more', async () => {
  const w = watches();
  const a = new TenantAdmission({ maxOpen: 0, tenantMaxOpen: 3, watch: w.watch });
  for (const id of ['w1', 'w2']) {
    a.take('acme');
    a.holdUntilClosed('acme', id, 'run');
  }
  a.close();
  await waitFor(() => a.openOf('acme') === 0);
});

test('a tenant at its bound: its partition is paused, its batch waits from memory committed after what it started, the other tenant flows, room lets the batch go on, and its end resumes the partition', async () => {
  // Every record starts an execution named after its topic and offset.
  handle.mockImplementation(async (_ctx, { topic, message: m }, { onStarted } = {}) => {
    onStarted?.(`${topic}@${m.offset}`, 'run');
    return 'started';
  });
  const w = watches();
  const { admission, consumer, each, metrics } = boundIngester(2, w);

  const flood = batchPayload('poimen.a.dispatch', [0, 1, 2, 3, 4], consumer);
  const trickle = batchPayload('poimen.b.dispatch', [0, 1], consumer);
  await Promise.all([each(flood.payload), each(trickle.payload)]);

  // A took its bound of 2 and waits, its turn handed back: committed through offset 1, the rest kept in memory.
  expect(handle.mock.calls.filter((c) => c[1].topic === 'poimen.a.dispatch')).toHaveLength(2);
  expect(flood.resolved).toEqual(['0', '1']);
  expect(flood.commits.at(-1)).toBe('2');
  expect(consumer.calls).toEqual(['pause poimen.a.dispatch/0']);
  // B's records all started beside it (within its own bound).
  expect(trickle.resolved).toEqual(['0', '1']);
  expect(
    (await metrics.registry.getSingleMetric('poimen_ingest_tenant_open_dispatches')!.get()).values,
  ).toEqual(expect.arrayContaining([expect.objectContaining({ labels: { tenant: 'a' }, value: 2 })]));

  // One of A's executions closes: room again, and the batch goes on from memory with record 2, fetching nothing.
  const startedOfA = () => handle.mock.calls.filter((c) => c[1].topic === 'poimen.a.dispatch').length;
  w.close('poimen.a.dispatch@0');
  await waitFor(() => startedOfA() === 3, { what: "A's record 2 started from memory" });
  expect(consumer.calls).toEqual(['pause poimen.a.dispatch/0']);
  // Two more closes let records 3 and 4 go; the batch is done, and its partition is fetched again past it.
  w.close('poimen.a.dispatch@1');
  await waitFor(() => startedOfA() === 4, { what: "A's record 3 started from memory" });
  w.close('poimen.a.dispatch@2');
  await waitFor(() => consumer.calls.length === 2, { what: "A's partition resumed" });
  expect(consumer.calls[1]).toBe('resume poimen.a.dispatch/0');
  expect(flood.resolved.at(-1)).toBe('4');
  expect(flood.commits.at(-1)).toBe('5');
  admission.close();
});

test('POIMEN_INGEST_TENANT_MAX_OPEN: 0 (no bound) by default; a bad value fails the start naming it', () => {
  expect(loadRelayConfig('ingester', {}).ingest.tenantMaxOpen).toBe(0);
  expect(loadRelayConfig('ingester', { POIMEN_INGEST_TENANT_MAX_OPEN: '64' }).ingest.tenantMaxOpen).toBe(64);
  expect(() => loadRelayConfig('ingester', { POIMEN_INGEST_TENANT_MAX_OPEN: '-1' })).toThrow(
    /POIMEN_INGEST_TENANT_MAX_OPEN/,
  );
});

test('records that start nothing open give their slots back: a duplicate, a dead letter, a start that failed', async () => {
  handle.mockImplementation(async (_ctx, { message: m }) => {
    if (m.offset === '0') return 'duplicate';
    if (m.offset === '1') return 'dead_lettered';
    throw new Error('Temporal unreachable');
  });
  const w = watches();
  const { admission, consumer, each } = boundIngester(2, w);
  await each(batchPayload('poimen.a.dispatch', [0, 1, 2], consumer).payload);
  expect(handle).toHaveBeenCalledTimes(3); // the bound of 2 never filled: each slot came back
  expect(admission.openOf('a')).toBe(0);
  expect(w.open.size).toBe(0);
  admission.close();
});
