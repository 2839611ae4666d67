/**
 * The OTLP exporters as configured by OpenTelemetry's variables, on the wire: a real receiver on 127.0.0.1 per
 * protocol (node:http decoding protobuf and JSON; a @grpc/grpc-js server for grpc) gets the relay's spans with
 * OTEL_EXPORTER_OTLP_HEADERS as request headers / gRPC metadata and OTEL_RESOURCE_ATTRIBUTES on the resource.
 * The parsing alone: otelConfig.test.ts; the relay end to end: it_tracing.test.ts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server, ServerCredentials, type ServiceDefinition, status } from '@grpc/grpc-js';
import { ROOT_CONTEXT, context, propagation, trace } from '@opentelemetry/api';
import { loadRelayConfig } from '../../src/config';
import { SpanKind, inSpan, startTracing } from '../../src/tracing/tracing';

/* eslint-disable-next-line @typescript-eslint/no-require-imports -- the SDK's generated OTLP protobuf types */
const otlp = require('@opentelemetry/otlp-transformer/build/src/generated/root') as {
  opentelemetry: {
    proto: { collector: { trace: { v1: { ExportTraceServiceRequest: { decode(b: Buffer): unknown } } } } };
  };
};
const Request = otlp.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

interface Received {
  headers: Record<string, string>;
  resource: Record<string, string>;
  spans: string[];
}

/** protobufjs message or OTLP JSON body -> what the test compares. */
function summary(body: unknown, headers: Record<string, string>): Received {
  const req = body as {
    resourceSpans: {
      resource: { attributes: { key: string; value: { stringValue?: string } }[] };
      scopeSpans: { spans: { name: string }[] }[];
    }[];
  };
  const resource: Record<string, string> = {};
  const spans: string[] = [];
  for (const rs of req.resourceSpans) {
    for (const a of rs.resource.attributes) resource[a.key] = a.value.stringValue ?? '';
    for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push(s.name);
  }
  return { headers, resource, spans };
}

async function httpReceiver() {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const json = req.headers['content-type']?.startsWith('application/json');
      if (req.url === '/v1/traces')
        received.push(
          summary(
            json ? JSON.parse(body.toString('utf8')) : Request.decode(body),
            req.headers as Record<string, string>,
          ),
        );
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
      res.end(json ? '{}' : Buffer.alloc(0));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    received,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

async function grpcReceiver() {
  const received: Received[] = [];
  const server = new Server();
  const service: ServiceDefinition = {
    Export: {
      path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
      requestStream: false,
      responseStream: false,
      requestDeserialize: (b: Buffer) => Request.decode(b),
      requestSerialize: () => Buffer.alloc(0),
      // An empty ExportTraceServiceResponse encodes to no bytes.
      responseSerialize: () => Buffer.alloc(0),
      responseDeserialize: () => ({}),
    },
  };
  server.addService(service, {
    Export: (
      call: { request: unknown; metadata: { getMap(): Record<string, unknown> } },
      cb: (e: { code: status } | null, r?: unknown) => void,
    ) => {
      const headers = Object.fromEntries(
        Object.entries(call.metadata.getMap()).map(([k, v]) => [k, String(v)]),
      );
      received.push(summary(call.request, headers));
      cb(null, {});
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  return {
    received,
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((r) => server.tryShutdown(() => r())),
  };
}

afterEach(() => {
  trace.disable();
  propagation.disable();
  context.disable();
});

test.each([
  ['http/protobuf', httpReceiver],
  ['http/json', httpReceiver],
  ['grpc', grpcReceiver],
])(
  'over %s the receiver gets the spans with the configured headers and resource attributes',
  async (protocol, receiver) => {
    const r = await receiver();
    try {
      const cfg = loadRelayConfig('worker', {
        OTEL_EXPORTER_OTLP_ENDPOINT: r.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        OTEL_EXPORTER_OTLP_HEADERS: 'x-otlp-token=s3cret%20value,x-tenant=acme',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test,k8s.pod.name=worker-1',
      }).tracing!;
      const tracing = startTracing(cfg);
      await inSpan('POST /v1/runs', { kind: SpanKind.CLIENT }, async () => undefined);
      await tracing.close(); // flushes the batch
      expect(r.received.length).toBeGreaterThan(0);
      const got = r.received.flatMap((x) => x.spans);
      expect(got).toEqual(['POST /v1/runs']);
      for (const x of r.received) {
        expect(x.headers).toMatchObject({ 'x-otlp-token': 's3cret value', 'x-tenant': 'acme' });
        expect(x.resource).toMatchObject({
          'service.name': 'poimen-relay-worker',
          'deployment.environment': 'test',
          'k8s.pod.name': 'worker-1',
        });
      }
    } finally {
      await r.close();
    }
  },
);

test("a span keeps its parent's W3C tracestate: what the relay propagates carries it on", async () => {
  const r = await httpReceiver();
  try {
    const tracing = startTracing(loadRelayConfig('worker', { OTEL_EXPORTER_OTLP_ENDPOINT: r.url }).tracing!);
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const tracestate = 'vendor=opaque,other=1';
    const parent = propagation.extract(ROOT_CONTEXT, { traceparent, tracestate });
    const carrier: Record<string, string> = {};
    await inSpan('process', { kind: SpanKind.CONSUMER, parent }, async () => {
      propagation.inject(context.active(), carrier);
    });
    await tracing.close();
    expect(carrier.traceparent).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/);
    expect(carrier.tracestate).toBe(tracestate);
  } finally {
    await r.close();
  }
});
