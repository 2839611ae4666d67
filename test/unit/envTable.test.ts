/**
 * The table of environment variables (src/config/envTable.ts) is what `--help` prints and which flags exist, so
 * it must name exactly the variables the config module reads: observed by handing the loaders an environment
 * that records every name asked for, not by reading source text. The dev stack's variables are in its own table
 * (devstack/envTable.ts), held to its loader the same way, and never in the relay's.
 */
import { ENV_VARS, flagOf } from '../../src/config/envTable';
import { type Env, loadRelayConfig } from '../../src/config';
import { loadStackConfig } from '../../devstack/config';
import { STACK_ENV_VARS } from '../../devstack/envTable';
import { GRPC_META_PREFIX, TEMPORAL_SDK_ENV } from '../../src/config/temporalEnv';
import { OTEL_SDK_ENV } from '../../src/config/otelEnv';

function recordingEnv(values: Env): { env: Env; asked: Set<string> } {
  const asked = new Set<string>();
  const env = new Proxy(values, {
    get(target, name) {
      if (typeof name === 'string') asked.add(name);
      return target[name as string];
    },
  });
  return { env, asked };
}

test('the table names exactly the variables the config module reads', () => {
  // SASL set, so the variables read only with a mechanism are asked for too.
  const { env, asked } = recordingEnv({
    KAFKA_SASL_MECHANISM: 'plain',
    KAFKA_SASL_USERNAME: 'u',
    KAFKA_SASL_PASSWORD: 'p',
  });
  for (const role of ['ingester', 'worker', 'cli'] as const) loadRelayConfig(role, env);
  // Plus what only the SDK's loader reads, from the copy of the environment the relay hands it.
  const sdk = [...TEMPORAL_SDK_ENV, `${GRPC_META_PREFIX}<NAME>`, ...OTEL_SDK_ENV];
  expect(ENV_VARS.map((v) => v.name).sort()).toEqual([...new Set([...asked, ...sdk])].sort());
});

test("the dev stack's table names exactly the variables its loader reads, and the relay's none of them", () => {
  const { env, asked } = recordingEnv({});
  loadStackConfig(env);
  const names = STACK_ENV_VARS.map((v) => v.name);
  expect([...names].sort()).toEqual([...asked].sort());
  expect(new Set(names).size).toBe(names.length);
  for (const v of STACK_ENV_VARS)
    expect({ name: v.name, ok: /^[^\n]{10,120}$/.test(v.description) }).toEqual({ name: v.name, ok: true });
  // The one name both read: the relay's namespace is the one the stack makes sure exists.
  expect(ENV_VARS.filter((v) => names.includes(v.name)).map((v) => v.name)).toEqual(['TEMPORAL_NAMESPACE']);
  // And its default: unset, the stack makes the namespace the relay then uses.
  expect(loadStackConfig({}).namespace).toBe(loadRelayConfig('cli', {}).temporal.namespace);
});

test('each variable once, described in one line, read by someone', () => {
  const names = ENV_VARS.map((v) => v.name);
  expect(new Set(names).size).toBe(names.length);
  for (const v of ENV_VARS) {
    expect({ name: v.name, ok: /^[^\n]{10,120}$/.test(v.description) }).toEqual({ name: v.name, ok: true });
    expect(v.readBy.length).toBeGreaterThan(0);
  }
});

test('a flag is the variable in lower case with dashes; secrets never have one (a command line shows in ps)', () => {
  expect(flagOf('KAFKA_BROKERS')).toBe('--kafka-brokers');
  expect(flagOf('TEMPORAL_TASK_QUEUE')).toBe('--temporal-task-queue');
  const withFlags = ENV_VARS.filter((v) => v.flagArg).map((v) => v.name);
  expect(withFlags).toEqual(
    expect.arrayContaining(['KAFKA_BROKERS', 'TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE']),
  );
  for (const name of withFlags) expect(name).not.toMatch(/PASSWORD|TOKEN|API_KEY|_KEY$|_CERT$/);
});

test('a connection row is one the one-shot commands read too: how to reach Kafka or Temporal, not a behaviour', () => {
  const misplaced = ENV_VARS.filter(
    (v) => v.connection && !v.readBy.includes('kafka-cli') && !v.readBy.includes('temporal-cli'),
  ).map((v) => v.name);
  expect(misplaced).toEqual([]);
  expect(ENV_VARS.filter((v) => v.connection).map((v) => v.name)).toEqual(
    expect.arrayContaining(['KAFKA_BROKERS', 'KAFKA_SASL_PASSWORD', 'TEMPORAL_ADDRESS', 'TEMPORAL_API_KEY']),
  );
});
