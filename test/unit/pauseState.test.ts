/**
 * What the pause topic's records make of each tenant's pause in one process (src/kafka/pauseState.ts): the latest
 * record of a tenant is its state, a tombstone keyed by it deletes it, anything else is skipped; the gauge, the log
 * lines after the first read and the change callback follow. Real Kafka: it_tenant_pause.
 */
import { Writable } from 'node:stream';
import type { KafkaMessage } from 'kafkajs';
import { type TenantPause, encodeTenantPause } from '../../src/contract';
import { TenantPauseState } from '../../src/kafka/pauseState';
import { createLogger } from '../../src/logger';
import { createMetrics } from '../../src/metrics';

let offset = 0;
function record(key: string | null, value: string | null): KafkaMessage {
  return {
    key: key === null ? null : Buffer.from(key),
    value: value === null ? null : Buffer.from(value),
    offset: String(offset++),
    timestamp: '0',
    attributes: 0,
    headers: {},
  } as KafkaMessage;
}

function pause(tenant: string, paused: boolean, reason: string | null = null): KafkaMessage {
  const p: TenantPause = { tenant, paused, reason, at: '2026-12-06T05:00:00.000Z', by: 'ops@host' };
  return record(tenant, encodeTenantPause(p));
}

function setUp() {
  const lines: { level: string; msg: string; tenant?: string; problem?: string; paused?: string[] }[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as (typeof lines)[number]);
      done();
    },
  });
  const metrics = createMetrics({ defaultMetrics: false });
  const changed: string[] = [];
  const state = new TenantPauseState({
    logger: createLogger('unit', 'info', { format: 'json', destination }),
    gauge: metrics.tenantPaused,
    onChange: (tenant) => changed.push(tenant),
  });
  const gauge = async () =>
    Object.fromEntries((await metrics.tenantPaused.get()).values.map((v) => [v.labels.tenant, v.value]));
  return { state, lines, changed, gauge };
}

test('the latest record of a tenant is its state; a tombstone deletes it, series and all', async () => {
  const { state, changed, gauge } = setUp();
  state.apply(pause('acme', true, 'migration'));
  state.apply(pause('beta', true));
  state.apply(pause('beta', false));
  expect(state.pauseOf('acme')?.reason).toBe('migration');
  expect(state.pauseOf('beta')).toBeUndefined();
  expect([...state.all().keys()]).toEqual(['acme', 'beta']);
  expect(await gauge()).toEqual({ acme: 1, beta: 0 });

  state.apply(record('acme', null));
  state.apply(record('beta', null));
  expect(state.pauseOf('acme')).toBeUndefined();
  expect(state.all().size).toBe(0);
  expect(await gauge()).toEqual({});
  expect(changed).toEqual(['acme', 'beta', 'beta', 'acme', 'beta']);

  // A tenant paused again after its deletion is paused.
  state.apply(pause('acme', true));
  expect(state.pauseOf('acme')).toBeDefined();
  expect(await gauge()).toEqual({ acme: 1 });
});

test('a record that is no pause is skipped with a warning, and the tenant keeps its state', async () => {
  const { state, lines, changed, gauge } = setUp();
  state.apply(pause('acme', true));
  state.apply(record('acme', 'paused'));
  state.apply(record(null, null));
  state.apply(record('Not.A.Tenant', null));
  expect(state.pauseOf('acme')).toBeDefined();
  expect(await gauge()).toEqual({ acme: 1 });
  expect(changed).toEqual(['acme']);
  expect(lines.map((l) => [l.msg, l.problem])).toEqual([
    ['skipping a record of the tenant pause topic', 'a value that is not JSON'],
    ['skipping a record of the tenant pause topic', 'a record without a value or a tenant for its key'],
    ['skipping a record of the tenant pause topic', 'a record without a value or a tenant for its key'],
  ]);
});

test('changes are logged only after the first read is announced, and only when paused or not changes', () => {
  const { state, lines } = setUp();
  state.apply(pause('acme', true));
  state.apply(pause('beta', true));
  state.apply(pause('beta', false));
  expect(lines).toEqual([]);
  state.announce();
  state.announce(); // once
  expect(lines.map((l) => [l.msg, l.paused])).toEqual([['tenant pauses read: 1 tenant(s) paused', ['acme']]]);
  lines.length = 0;

  state.apply(pause('acme', true, 'a new reason')); // still paused: no line
  state.apply(pause('gamma', false)); // never paused, not paused: no line
  state.apply(record('beta', null)); // not paused, deleted: no line
  expect(lines).toEqual([]);
  state.apply(pause('beta', true));
  state.apply(pause('beta', false));
  state.apply(record('acme', null));
  expect(lines.map((l) => [l.level, l.msg, l.tenant])).toEqual([
    ['info', 'tenant paused: its records wait in Kafka', 'beta'],
    ['info', 'tenant resumed', 'beta'],
    ['warn', 'tenant resumed: its pause was deleted', 'acme'],
  ]);
});

test('without a gauge (a command’s one-shot read), a tombstone deletes the pause all the same', () => {
  const state = new TenantPauseState({ logger: createLogger('unit', 'silent') });
  state.apply(pause('acme', true));
  state.apply(record('acme', null));
  expect(state.all().size).toBe(0);
});
