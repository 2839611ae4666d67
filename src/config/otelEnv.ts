/**
 * Tracing configuration from OpenTelemetry's standard environment variables (the SDK environment specification):
 * how the variables the relay honours combine into one tracing setup, and which of those set it does not honour.
 * Their rows, parsers and defaults are in vars/tracing.ts. A bad value throws a ConfigError naming the variable,
 * like every other setting; the SDK itself would only log a diagnostic and fall back to a default.
 * tracing/tracing.ts builds the SDK from the result.
 */
import type { TracingConfig } from '../tracing/tracing';
import { type EnvVar, type ParsedVar, type Role, defaultOf, varReader } from './envVar';
import { type Env, read } from './schema';
import { TRACING } from './vars/tracing';

/**
 * Standard variables the SDK reads itself, as the specification says (batch span processor, exporter timeout):
 * honoured, and only checked here (their rows say `sdk`): the SDK takes them from the environment, with its own
 * defaults. test/unit/envTable.test.ts adds them to what it observes.
 */
export const OTEL_SDK_ENV: readonly string[] = Object.values(TRACING)
  .filter((v) => 'sdk' in v)
  .map((v) => v.name);
/** Those of them the relay checks at start: their rows have a schema. */
const SDK_CHECKED = Object.values<EnvVar>(TRACING).filter(
  (v): v is ParsedVar<unknown> => v.sdk === true && 'schema' in v,
);

/**
 * On when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is set and OTEL_SDK_DISABLED is not
 * true. Over HTTP the generic endpoint gets `/v1/traces`; over gRPC it is used as it is. The traces-specific
 * protocol and headers win over the generic ones (headers merge, the specific value per name). OTEL_SERVICE_NAME
 * wins over a `service.name` in OTEL_RESOURCE_ATTRIBUTES; by default `poimen-relay-<role>`. The sampler is the
 * specification's default, parentbased_always_on, unless OTEL_TRACES_SAMPLER names another.
 */
export function tracingOf(env: Env, role: Role): { tracing?: TracingConfig } {
  const v = varReader(env, role);
  const t = TRACING;
  // Every variable is read (and checked) even when tracing is off: a typo shows at start, not at the next enable.
  const disabled = v(t.OTEL_SDK_DISABLED);
  const traces = v(t.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const generic = v(t.OTEL_EXPORTER_OTLP_ENDPOINT);
  const proto = v(t.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) ?? v(t.OTEL_EXPORTER_OTLP_PROTOCOL);
  const headers = {
    ...(v(t.OTEL_EXPORTER_OTLP_HEADERS) ?? {}),
    ...(v(t.OTEL_EXPORTER_OTLP_TRACES_HEADERS) ?? {}),
  };
  const attributes = v(t.OTEL_RESOURCE_ATTRIBUTES) ?? {};
  const service = t.OTEL_SERVICE_NAME;
  const serviceName = read(
    env,
    service.name,
    service.schema,
    attributes['service.name'] ?? defaultOf(service, role),
  );
  const samplerName = v(t.OTEL_TRACES_SAMPLER);
  const samplerRatio = v(t.OTEL_TRACES_SAMPLER_ARG);
  // What the SDK reads itself is checked too (a bad value would be a diagnostic and the SDK's default), but its
  // value is not handed over: the SDK stays the one that reads it.
  for (const row of SDK_CHECKED) v(row);
  const grpc = proto === 'grpc';
  const tracesUrl = traces ?? (generic === undefined ? undefined : grpc ? generic : `${generic}/v1/traces`);
  if (disabled || tracesUrl === undefined) return {};
  return {
    tracing: {
      protocol: proto,
      tracesUrl,
      serviceName,
      headers,
      resourceAttributes: attributes,
      sampler: { name: samplerName, ratio: samplerRatio },
    },
  };
}

/**
 * The OTEL_* variables set in `env` that the relay does not honour (not among `honoured`, the env table's rows
 * for the process), in name order: the process names them in one log line at start rather than ignore them.
 */
export function unhonouredOtelVariables(env: Env, honoured: readonly string[]): string[] {
  return Object.keys(env)
    .filter((name) => name.startsWith('OTEL_') && (env[name] ?? '').trim() !== '' && !honoured.includes(name))
    .sort();
}
