/**
 * OpenTelemetry's standard variables as the relay reads them (src/config/otelEnv.ts): protocol, headers, resource
 * attributes, sampler; a bad value stops the process with one line naming the variable; an OTEL_* variable the
 * relay does not read is named (the line serve.ts logs). The exporters on the wire: test/it_otlp_export.test.ts.
 */
import { ROOT_CONTEXT, SpanKind, TraceFlags, trace } from '@opentelemetry/api';
import { SamplingDecision } from '@opentelemetry/sdk-trace-base';
import { ConfigError } from '../../src/errors';
import { loadRelayConfig } from '../../src/config';
import { explainRelayConfig } from '../../src/config/effective';
import { samplerOf } from '../../src/tracing/tracing';

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318' };
const tracing = (env: Record<string, string>) => loadRelayConfig('worker', { ...ENDPOINT, ...env }).tracing;

test("defaults are the specification's: http/protobuf to <endpoint>/v1/traces, parentbased_always_on, no headers", () => {
  expect(tracing({})).toEqual({
    protocol: 'http/protobuf',
    tracesUrl: 'http://otel:4318/v1/traces',
    serviceName: 'poimen-relay-worker',
    headers: {},
    resourceAttributes: {},
    sampler: { name: 'parentbased_always_on', ratio: 1 },
  });
});

test('OTEL_TRACES_SAMPLER=traceidratio with OTEL_TRACES_SAMPLER_ARG=0.25 samples a quarter of the traces', () => {
  const cfg = tracing({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' });
  expect(cfg?.sampler).toEqual({ name: 'traceidratio', ratio: 0.25 });
  // The sampler the SDK is given: the ratio reaches it as set.
  expect(samplerOf(cfg!.sampler).toString()).toBe('TraceIdRatioBased{0.25}');
});

test('over gRPC the generic endpoint is used as it is; the traces protocol wins over the generic one', () => {
  expect(tracing({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toMatchObject({
    protocol: 'grpc',
    tracesUrl: 'http://otel:4318',
  });
  expect(
    tracing({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }),
  ).toMatchObject({ protocol: 'http/json', tracesUrl: 'http://otel:4318/v1/traces' });
});

test('headers and resource attributes are key=value lists, percent-decoded; the traces headers merge over', () => {
  const cfg = tracing({
    OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20abc, x-tenant=acme',
    OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-tenant=globex',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,service.name=relay-eu,k8s.pod.name=w%2C1',
  });
  expect(cfg?.headers).toEqual({ Authorization: 'Bearer abc', 'x-tenant': 'globex' });
  expect(cfg?.resourceAttributes).toEqual({
    'deployment.environment': 'prod',
    'service.name': 'relay-eu',
    'k8s.pod.name': 'w,1',
  });
  // service.name from the attributes when OTEL_SERVICE_NAME is unset; OTEL_SERVICE_NAME wins when set.
  expect(cfg?.serviceName).toBe('relay-eu');
  expect(
    tracing({ OTEL_RESOURCE_ATTRIBUTES: 'service.name=relay-eu', OTEL_SERVICE_NAME: 'relay-us' })
      ?.serviceName,
  ).toBe('relay-us');
});

test.each([
  ['OTEL_EXPORTER_OTLP_PROTOCOL', 'http', 'must be one of http/protobuf, http/json, grpc'],
  ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'udp', 'must be one of'],
  ['OTEL_TRACES_SAMPLER', 'jaeger_remote', 'must be one of always_on'],
  ['OTEL_TRACES_SAMPLER_ARG', '1.5', 'between 0 and 1'],
  ['OTEL_TRACES_SAMPLER_ARG', 'half', 'between 0 and 1'],
  ['OTEL_RESOURCE_ATTRIBUTES', 'deployment.environment', 'is not key=value'],
  ['OTEL_RESOURCE_ATTRIBUTES', 'a=%zz', 'not valid percent-encoding'],
  ['OTEL_RESOURCE_ATTRIBUTES', 'a=1,a=2', 'named twice'],
  ['OTEL_EXPORTER_OTLP_HEADERS', 'bad header=1', 'is not key=value'],
  ['OTEL_EXPORTER_OTLP_TRACES_HEADERS', 'x=%0A', 'not printable ASCII'],
  ['OTEL_EXPORTER_OTLP_HEADERS', 'a=1,Authorization:Bearer s3cr3t-t0ken', 'entry 2 is not key=value'],
  // Read by the SDK itself, which would log a diagnostic and take its default: checked at start all the same.
  ['OTEL_BSP_SCHEDULE_DELAY', '-1', 'must be a whole number'],
  ['OTEL_BSP_SCHEDULE_DELAY', '5s', 'must be a whole number'],
  ['OTEL_BSP_MAX_QUEUE_SIZE', '0', 'must be >= 1'],
  ['OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 'lots', 'must be a whole number'],
  ['OTEL_BSP_EXPORT_TIMEOUT', '2147483648', 'must be <= 2147483647'],
  ['OTEL_EXPORTER_OTLP_TIMEOUT', '0', 'must be >= 1'],
  ['OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', '1.5', 'must be a whole number'],
])('%s=%s stops the process with one line naming the variable', (name, value, why) => {
  // Checked with tracing off too: a typo shows at start, not on the day tracing is turned on.
  for (const env of [{ [name]: value }, { ...ENDPOINT, [name]: value }]) {
    let err: unknown;
    try {
      loadRelayConfig('ingester', env);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as Error).message;
    expect(message).toContain(name);
    expect(message).toContain(why);
    expect(message).not.toContain('\n');
    // A header is a credential: no part of the value is echoed.
    if (name.includes('HEADERS')) expect(message).not.toMatch(/s3cr3t|Bearer|bad header/);
  }
});

test('the variables the SDK reads itself are checked, not handed over: the SDK still reads them', () => {
  const sdkSet = {
    OTEL_BSP_SCHEDULE_DELAY: '0',
    OTEL_BSP_MAX_QUEUE_SIZE: '4096',
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: ' 256 ',
    OTEL_BSP_EXPORT_TIMEOUT: '10000',
    OTEL_EXPORTER_OTLP_TIMEOUT: '5000',
    OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '2147483647',
  };
  expect(tracing(sdkSet)).toEqual(tracing({}));
  const { settings } = explainRelayConfig('ingester', { ...ENDPOINT, ...sdkSet });
  const of = (name: string) => settings.find((s) => s.name === name);
  expect(of('OTEL_BSP_MAX_EXPORT_BATCH_SIZE')).toEqual({
    name: 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
    value: '256',
    source: 'environment',
  });
  // Unset, the SDK's own default applies: the relay names none.
  expect(
    explainRelayConfig('ingester', ENDPOINT).settings.find((s) => s.name === 'OTEL_BSP_SCHEDULE_DELAY'),
  ).toEqual({ name: 'OTEL_BSP_SCHEDULE_DELAY', value: null, source: 'unset' });
});

test("a bad header list does not echo the headers' values (they carry credentials)", () => {
  expect(() => tracing({ OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%zzsecret' })).toThrow(
    /OTEL_EXPORTER_OTLP_HEADERS/,
  );
  expect(() => tracing({ OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%zzsecret' })).not.toThrow(
    /secret/,
  );
});

test('`poimen-relay config` shows each variable, the headers only as set', () => {
  const { settings } = explainRelayConfig('worker', {
    ...ENDPOINT,
    OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer abc',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
    OTEL_TRACES_SAMPLER: 'traceidratio',
  });
  const of = (name: string) => settings.find((s) => s.name === name);
  expect(of('OTEL_EXPORTER_OTLP_HEADERS')).toEqual({
    name: 'OTEL_EXPORTER_OTLP_HEADERS',
    value: 'set',
    source: 'environment',
  });
  expect(of('OTEL_EXPORTER_OTLP_PROTOCOL')?.value).toBe('grpc');
  expect(of('OTEL_TRACES_SAMPLER')?.value).toBe('traceidratio');
  expect(of('OTEL_TRACES_SAMPLER_ARG')).toMatchObject({ value: '1', source: 'default' });
  expect(of('OTEL_RESOURCE_ATTRIBUTES')?.source).toBe('unset');
});

test('the OTEL_* variables set but not read by the relay are named, those it reads (or the SDK does) are not', () => {
  const { unhonoured } = explainRelayConfig('ingester', {
    ...ENDPOINT,
    OTEL_TRACES_SAMPLER: 'always_on',
    OTEL_BSP_SCHEDULE_DELAY: '200',
    OTEL_PROPAGATORS: 'b3',
    OTEL_METRICS_EXPORTER: 'prometheus',
    OTEL_LOGS_EXPORTER: ' ',
    KAFKA_CLIENT_ID: 'c',
  });
  expect(unhonoured).toEqual(['OTEL_METRICS_EXPORTER', 'OTEL_PROPAGATORS']);
  expect(explainRelayConfig('worker', { ...ENDPOINT }).unhonoured).toEqual([]);
});

describe('the sampler OTEL_TRACES_SAMPLER names', () => {
  // The SDK's ratio sampler XORs the id's four 32-bit words: this one is near the top: sampled at 1, not at 0.5.
  const traceId = 'fffffffe000000000000000000000000';
  const decide = (name: string, ratio: number, parentSampled?: boolean) => {
    const parent =
      parentSampled === undefined
        ? ROOT_CONTEXT
        : trace.setSpanContext(ROOT_CONTEXT, {
            traceId,
            spanId: 'aaaaaaaaaaaaaaaa',
            traceFlags: parentSampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
            isRemote: true,
          });
    return samplerOf({ name: name as never, ratio }).shouldSample(
      parent,
      traceId,
      's',
      SpanKind.CLIENT,
      {},
      [],
    ).decision;
  };
  const ON = SamplingDecision.RECORD_AND_SAMPLED;
  const OFF = SamplingDecision.NOT_RECORD;
  test.each([
    ['always_on', 0, undefined, ON],
    ['always_off', 1, undefined, OFF],
    ['traceidratio', 1, undefined, ON],
    ['traceidratio', 0.5, undefined, OFF],
    ['traceidratio', 0.5, true, OFF],
    ['parentbased_always_on', 1, undefined, ON],
    ['parentbased_always_on', 1, false, OFF],
    ['parentbased_always_off', 1, true, ON],
    ['parentbased_always_off', 1, undefined, OFF],
    ['parentbased_traceidratio', 0.5, true, ON],
    ['parentbased_traceidratio', 0.5, undefined, OFF],
    ['parentbased_traceidratio', 1, undefined, ON],
  ])('%s (ratio %s, parent sampled: %s)', (name, ratio, parent, expected) => {
    expect(decide(name, ratio, parent)).toBe(expected);
  });
});
