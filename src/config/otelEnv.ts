/**
 * Tracing configuration from OpenTelemetry's standard environment variables (the SDK environment specification):
 * the owner of which OTEL_* variables the relay honours, how each is parsed, and the list of those it does not.
 * A bad value throws a ConfigError naming the variable, like every other setting; the SDK itself would only log
 * a diagnostic and fall back to a default. tracing/tracing.ts builds the SDK from the result.
 */
import { z } from 'zod';
import { type Env, bool, httpUrl, nonEmpty, read } from './schema';
import type { OtlpProtocol, SamplerName, TracingConfig } from '../tracing/tracing';

export const OTLP_PROTOCOLS: readonly OtlpProtocol[] = ['http/protobuf', 'http/json', 'grpc'];
export const SAMPLERS: readonly SamplerName[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

const protocol = z.enum(OTLP_PROTOCOLS as [OtlpProtocol, ...OtlpProtocol[]], {
  message: `must be one of ${OTLP_PROTOCOLS.join(', ')}`,
});
const sampler = z.enum(SAMPLERS as [SamplerName, ...SamplerName[]], {
  message: `must be one of ${SAMPLERS.join(', ')}`,
});
const ratio = z
  .string()
  .regex(/^(\d+(\.\d*)?|\.\d+)$/, 'must be a number between 0 and 1')
  .transform(Number)
  .pipe(z.number().max(1, 'must be between 0 and 1'));

/**
 * The W3C Baggage-like list the specification gives OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES:
 * `key=value,key2=value2`, values percent-decoded. An entry without `=` or a key, a malformed escape, or a key
 * given twice is refused (the SDK would drop it silently).
 */
const keyValueList = z.string().transform((v, ctx) => {
  const out: Record<string, string> = {};
  for (const [i, entry] of v.split(',').entries()) {
    const at = entry.indexOf('=');
    const key = at < 0 ? '' : entry.slice(0, at).trim();
    if (key === '' || /[\s"]/.test(key)) {
      // By position, never by text: the entry may be a credential typed with ':' for '=' ("Authorization:Bearer …").
      ctx.addIssue({ code: 'custom', message: `entry ${i + 1} is not key=value` });
      return z.NEVER;
    }
    let value: string;
    try {
      value = decodeURIComponent(entry.slice(at + 1).trim());
    } catch {
      ctx.addIssue({ code: 'custom', message: `the value of ${key} is not valid percent-encoding` });
      return z.NEVER;
    }
    if (key in out) {
      ctx.addIssue({ code: 'custom', message: `${key} is named twice` });
      return z.NEVER;
    }
    out[key] = value;
  }
  return out as Readonly<Record<string, string>>;
});

/** Header names and values an HTTP request and gRPC metadata can carry (RFC 9110 token, field-value). */
const headerList = keyValueList.superRefine((headers, ctx) => {
  for (const [name, value] of Object.entries(headers)) {
    if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name))
      ctx.addIssue({ code: 'custom', message: `${JSON.stringify(name)} is not a header name` });
    else if (!/^[\x20-\x7e\t]*$/.test(value))
      ctx.addIssue({ code: 'custom', message: `the value of ${name} is not printable ASCII` });
  }
});

/**
 * Standard variables the SDK reads itself, as the specification says (batch span processor, exporter timeout):
 * honoured, never parsed here. The env table lists them; test/unit/envTable.test.ts adds them to what it observes.
 */
export const OTEL_SDK_ENV = [
  'OTEL_BSP_SCHEDULE_DELAY',
  'OTEL_BSP_MAX_QUEUE_SIZE',
  'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
  'OTEL_BSP_EXPORT_TIMEOUT',
  'OTEL_EXPORTER_OTLP_TIMEOUT',
  'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT',
] as const;

/**
 * On when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is set and OTEL_SDK_DISABLED is not
 * true. Over HTTP the generic endpoint gets `/v1/traces`; over gRPC it is used as it is. The traces-specific
 * protocol and headers win over the generic ones (headers merge, the specific value per name). OTEL_SERVICE_NAME
 * wins over a `service.name` in OTEL_RESOURCE_ATTRIBUTES; by default `poimen-relay-<role>`. The sampler is the
 * specification's default, parentbased_always_on, unless OTEL_TRACES_SAMPLER names another.
 */
export function tracingOf(env: Env, role: string): { tracing?: TracingConfig } {
  // Every variable is read (and checked) even when tracing is off: a typo shows at start, not at the next enable.
  const disabled = read(env, 'OTEL_SDK_DISABLED', bool, false);
  const traces = read(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', httpUrl);
  const generic = read(env, 'OTEL_EXPORTER_OTLP_ENDPOINT', httpUrl);
  const proto =
    read(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', protocol) ??
    read(env, 'OTEL_EXPORTER_OTLP_PROTOCOL', protocol, 'http/protobuf');
  const headers = {
    ...(read(env, 'OTEL_EXPORTER_OTLP_HEADERS', headerList) ?? {}),
    ...(read(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS', headerList) ?? {}),
  };
  const attributes = read(env, 'OTEL_RESOURCE_ATTRIBUTES', keyValueList) ?? {};
  const serviceName = read(
    env,
    'OTEL_SERVICE_NAME',
    nonEmpty,
    attributes['service.name'] ?? `poimen-relay-${role}`,
  );
  const samplerName = read(env, 'OTEL_TRACES_SAMPLER', sampler, 'parentbased_always_on');
  const samplerRatio = read(env, 'OTEL_TRACES_SAMPLER_ARG', ratio, 1);
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
