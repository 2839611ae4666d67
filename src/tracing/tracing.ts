/**
 * OpenTelemetry for the relay's own hop: the one place that builds the SDK (the tracer provider, its sampler, its
 * OTLP exporter over HTTP (protobuf or JSON) or gRPC, the W3C propagator: traceparent and tracestate) and the Temporal interceptors that carry a trace through the workflow and its
 * activities. Off unless an OTLP endpoint is configured (config/env.ts `tracing`): then nothing here is built, the
 * API's tracer is the no-op one, and the worker runs the workflow bundle without the tracing interceptors.
 */
import {
  type Context,
  INVALID_SPAN_CONTEXT,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  context,
  propagation,
  trace,
} from '@opentelemetry/api';
import { Metadata, credentials } from '@grpc/grpc-js';
import { OTLPTraceExporter as OtlpGrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base';
import { Resource } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  type Sampler,
  type SpanExporter,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-node';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client';
import {
  OpenTelemetryActivityInboundInterceptor,
  makeWorkflowExporter,
} from '@temporalio/interceptors-opentelemetry/lib/worker';
import type { Context as ActivityContext } from '@temporalio/activity';
import { VERSION } from '../version';

/** The workflow-side interceptors, bundled into the traced workflow bundle (worker/workflowBundle.ts). */
export const WORKFLOW_TRACING_MODULE =
  require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

/** OTEL_EXPORTER_OTLP_PROTOCOL's values. */
export type OtlpProtocol = 'http/protobuf' | 'http/json' | 'grpc';
/** OTEL_TRACES_SAMPLER's values the SDK implements. */
export type SamplerName =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio';

/** Read from the standard OTEL_* variables by config/otelEnv.ts. */
export interface TracingConfig {
  protocol: OtlpProtocol;
  /** Where spans go: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or the generic endpoint (+ /v1/traces over HTTP). */
  tracesUrl: string;
  serviceName: string;
  /** Sent with every export (HTTP headers, gRPC metadata). */
  headers: Readonly<Record<string, string>>;
  /** OTEL_RESOURCE_ATTRIBUTES, beside service.name and service.version. */
  resourceAttributes: Readonly<Record<string, string>>;
  /** `ratio`: OTEL_TRACES_SAMPLER_ARG, used by the traceidratio samplers. */
  sampler: { name: SamplerName; ratio: number };
}

/** The sampler OTEL_TRACES_SAMPLER names, built from the SDK's own classes. */
export function samplerOf({ name, ratio }: TracingConfig['sampler']): Sampler {
  const root: Readonly<Record<string, () => Sampler>> = {
    always_on: () => new AlwaysOnSampler(),
    always_off: () => new AlwaysOffSampler(),
    traceidratio: () => new TraceIdRatioBasedSampler(ratio),
  };
  const sampler = root[name.replace(/^parentbased_/, '')]!();
  return name.startsWith('parentbased_') ? new ParentBasedSampler({ root: sampler }) : sampler;
}

/**
 * The exporter of the configured protocol. Headers and compression are given explicitly, so the exporters'
 * own reading of the environment adds nothing the relay's configuration does not show.
 */
function exporterOf(cfg: TracingConfig): SpanExporter {
  const common = { url: cfg.tracesUrl, compression: CompressionAlgorithm.NONE };
  if (cfg.protocol === 'grpc') {
    const metadata = new Metadata();
    for (const [k, v] of Object.entries(cfg.headers)) metadata.set(k, v);
    const secure = cfg.tracesUrl.startsWith('https://');
    return new OtlpGrpcExporter({
      ...common,
      metadata,
      credentials: secure ? credentials.createSsl() : credentials.createInsecure(),
    });
  }
  const http = { ...common, headers: { ...cfg.headers } };
  return cfg.protocol === 'http/json' ? new OtlpJsonExporter(http) : new OtlpProtoExporter(http);
}

export interface Tracing {
  /** The ingester's client: a span per start, its context in the workflow's header. */
  clientInterceptors(): { workflow: OpenTelemetryWorkflowClientInterceptor[] };
  /** A worker's: the activity's span (a child of the workflow's), and the sink the workflow's spans leave by. */
  workerOptions(): {
    interceptors: {
      activity: ((ctx: ActivityContext) => { inbound: OpenTelemetryActivityInboundInterceptor })[];
    };
    sinks: { exporter: ReturnType<typeof makeWorkflowExporter> };
  };
  /** Flushes what is buffered and stops exporting. Idempotent. */
  close(): Promise<void>;
}

/**
 * The relay's tracer while its tracing runs, else none: never the global one, so an application embedding the
 * relay with tracing off keeps its own provider out of the relay's hop (and the record's traceparent reaches the
 * API as it came).
 */
let relayTracer: Tracer | undefined;

export function startTracing(cfg: TracingConfig): Tracing {
  const resource = new Resource({
    'service.version': VERSION,
    ...cfg.resourceAttributes,
    'service.name': cfg.serviceName,
  });
  const processor = new BatchSpanProcessor(exporterOf(cfg));
  const provider = new NodeTracerProvider({
    resource,
    sampler: samplerOf(cfg.sampler),
    spanProcessors: [processor],
  });
  // Global context manager (AsyncLocalStorage) and W3C trace-context propagator: the Temporal interceptors
  // inject and extract through them.
  provider.register();
  const tracer = provider.getTracer('poimen-relay', VERSION);
  relayTracer = tracer;
  let closing: Promise<void> | undefined;
  return {
    // The interceptors are handed this provider's tracer, not the global one another provider may hold.
    clientInterceptors: () => ({ workflow: [new OpenTelemetryWorkflowClientInterceptor({ tracer })] }),
    workerOptions: () => ({
      interceptors: {
        activity: [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer }) })],
      },
      sinks: { exporter: makeWorkflowExporter(processor, resource) },
    }),
    close: () =>
      (closing ??= (async () => {
        if (relayTracer === tracer) relayTracer = undefined;
        await provider.shutdown();
      })()),
  };
}

/** The context a record's `traceparent` header names (a new root when it has none or an invalid one). */
export function recordContext(traceparent: string | undefined): Context {
  return traceparent === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, { traceparent });
}

/**
 * Runs `fn` inside a span (kind, attributes), ending it when `fn` settles and recording an error it throws.
 * With tracing off `fn` runs with a non-recording span and no traceparent: the cost is a function call.
 */
export async function inSpan<T>(
  name: string,
  opts: { kind: SpanKind; parent?: Context; attributes?: Record<string, string | number> },
  /** `traceparent`: the span's own, to pass on (undefined while tracing is off). */
  fn: (traceparent: string | undefined, span: Span) => Promise<T>,
): Promise<T> {
  if (relayTracer === undefined) return fn(undefined, trace.wrapSpanContext(INVALID_SPAN_CONTEXT));
  const span = relayTracer.startSpan(
    name,
    { kind: opts.kind, ...(opts.attributes ? { attributes: opts.attributes } : {}) },
    opts.parent ?? context.active(),
  );
  const ctx = trace.setSpan(opts.parent ?? context.active(), span);
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  try {
    return await context.with(ctx, () => fn(span.isRecording() ? carrier.traceparent : undefined, span));
  } catch (err) {
    span.recordException(err instanceof Error ? err : String(err));
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw err;
  } finally {
    span.end();
  }
}

export { SpanKind };
