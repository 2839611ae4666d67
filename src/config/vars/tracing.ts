/**
 * Rows of the env table for tracing: the OpenTelemetry standard variables the relay honours (the SDK environment
 * specification), with the parsers of their values. Those the SDK reads itself (`sdk`) have a schema only to be
 * checked at start; otelEnv.ts builds the tracing configuration from the others. Each row is the variable's one
 * home (envVar.ts).
 */
import { z } from 'zod';
import type { OtlpProtocol, SamplerName } from '../../tracing/tracing';
import { RELAY, parsed, perRole, rows } from '../envVar';
import { bool, httpUrl, intIn, nonEmpty } from '../schema';

/** The longest delay setTimeout takes (2^31 - 1 ms). */
const MAX_TIMER_MS = 2_147_483_647;

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

export const TRACING = rows({
  OTEL_EXPORTER_OTLP_ENDPOINT: parsed({
    description: 'OTLP/HTTP endpoint for traces (+ /v1/traces); unset: tracing off',
    readBy: RELAY,
    schema: httpUrl,
  }),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: parsed({
    description: 'OTLP/HTTP traces URL, used as it is (wins over the generic endpoint)',
    readBy: RELAY,
    schema: httpUrl,
  }),
  OTEL_SERVICE_NAME: parsed({
    description: 'service.name of the spans (poimen-relay-<role>)',
    readBy: RELAY,
    schema: nonEmpty,
    // Unless OTEL_RESOURCE_ATTRIBUTES names a service.name (otelEnv.ts).
    default: perRole({
      ingester: 'poimen-relay-ingester',
      worker: 'poimen-relay-worker',
      cli: 'poimen-relay-cli',
    }),
  }),
  OTEL_SDK_DISABLED: parsed({
    description: 'true: no tracing even with an endpoint set',
    readBy: RELAY,
    schema: bool,
    default: false,
  }),
  OTEL_EXPORTER_OTLP_PROTOCOL: parsed({
    description: 'http/protobuf (default), http/json or grpc (endpoint used as it is)',
    readBy: RELAY,
    schema: protocol,
    default: 'http/protobuf',
  }),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: parsed({
    description: 'the protocol for traces (wins over OTEL_EXPORTER_OTLP_PROTOCOL)',
    readBy: RELAY,
    schema: protocol,
  }),
  OTEL_EXPORTER_OTLP_HEADERS: parsed({
    description: 'headers of every export, key=value,... percent-encoded (never logged)',
    readBy: RELAY,
    schema: headerList,
  }),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: parsed({
    description: 'headers of trace exports, merged over OTEL_EXPORTER_OTLP_HEADERS (never logged)',
    readBy: RELAY,
    schema: headerList,
  }),
  OTEL_RESOURCE_ATTRIBUTES: parsed({
    description: 'resource attributes of the spans, key=value,... percent-encoded',
    readBy: RELAY,
    schema: keyValueList,
  }),
  OTEL_TRACES_SAMPLER: parsed({
    description: 'always_on, always_off, traceidratio or parentbased_* (default parentbased_always_on)',
    readBy: RELAY,
    schema: sampler,
    default: 'parentbased_always_on',
  }),
  OTEL_TRACES_SAMPLER_ARG: parsed({
    description: 'sampling ratio of the traceidratio samplers, 0 to 1 (default 1)',
    readBy: RELAY,
    schema: ratio,
    default: 1,
  }),
  // The six below are read by the SDK itself, from the environment: the relay only checks them at start (their
  // schema) and hands nothing over, so a bad value stops the start with one line instead of a diagnostic the SDK
  // logs before it falls back to its default. No default here: the SDK's own applies. The bound is setTimeout's
  // (a longer delay fires at once), a count's too (no batch is that large).
  OTEL_BSP_SCHEDULE_DELAY: parsed({
    description: 'ms between two exports of buffered spans; read by the SDK',
    readBy: RELAY,
    sdk: true,
    schema: intIn(0, MAX_TIMER_MS),
  }),
  OTEL_BSP_MAX_QUEUE_SIZE: parsed({
    description: 'spans buffered at most; read by the SDK',
    readBy: RELAY,
    sdk: true,
    schema: intIn(1, MAX_TIMER_MS),
  }),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: parsed({
    description: 'spans per export at most; read by the SDK',
    readBy: RELAY,
    sdk: true,
    schema: intIn(1, MAX_TIMER_MS),
  }),
  OTEL_BSP_EXPORT_TIMEOUT: parsed({
    description: 'ms one export may take; read by the SDK',
    readBy: RELAY,
    sdk: true,
    schema: intIn(1, MAX_TIMER_MS),
  }),
  // The exporter's timeouts: the SDK takes a number > 0 and ignores any other with a diagnostic.
  OTEL_EXPORTER_OTLP_TIMEOUT: parsed({
    description: 'ms one OTLP request may take; read by the SDK',
    readBy: RELAY,
    sdk: true,
    schema: intIn(1, MAX_TIMER_MS),
  }),
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: parsed({
    description: 'ms one OTLP traces request may take; read by the SDK',
    readBy: RELAY,
    sdk: true,
    schema: intIn(1, MAX_TIMER_MS),
  }),
});
