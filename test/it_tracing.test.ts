/**
 * End-to-end tracing (docs/metrics.md, "Tracing"): with an OTLP endpoint set, one record's trace runs from its
 * producer through the ingester's span, the workflow start, the workflow, the call's activity and the HTTP call,
 * whose context is the `traceparent` the runs API receives. A real OTLP/HTTP receiver (node:http, JSON), real
 * Kafka and Temporal, the relay's processes.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import crypto from 'node:crypto';
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

jest.setTimeout(180_000);

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  service: string;
}

/** Collects every span posted to /v1/traces (OTLP/HTTP with JSON bodies). */
async function otlpReceiver() {
  const spans: OtlpSpan[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: {
            resource: { attributes: { key: string; value: { stringValue?: string } }[] };
            scopeSpans: { spans: Omit<OtlpSpan, 'service'>[] }[];
          }[];
        };
        for (const rs of body.resourceSpans) {
          const service =
            rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
          for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push({ ...s, service });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    spans,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

let h: Harness;
let receiver: Awaited<ReturnType<typeof otlpReceiver>>;
afterEach(async () => {
  await h?.cleanup();
  await receiver?.close();
  receiver = undefined as never;
});

describe('tracing over OTLP', () => {
  test("one trace from the record's traceparent through ingester, workflow, activity and HTTP call; the API receives the call's span as parent", async () => {
    receiver = await otlpReceiver();
    h = await createHarness({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        // This receiver reads JSON; the default, http/protobuf, is test/unit/otlpExport.test.ts's.
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '200',
      },
    });
    await h.startWorker();
    await h.startIngester();
    const traceId = crypto.randomBytes(16).toString('hex');
    const producerSpan = crypto.randomBytes(8).toString('hex');
    await h.publish(h.dispatchValue('traced-1'), {
      headers: { traceparent: `00-${traceId}-${producerSpan}-01` },
    });

    await waitFor(() => h.api.runs.has('traced-1'), { timeoutMs: 60_000, what: 'the run' });
    const received = h.api.requestsFor('traced-1')[0]!.headers.traceparent as string;
    const [, apiTrace, apiParent] = received.split('-');
    expect(apiTrace).toBe(traceId);

    const names = [
      `process poimen.${h.tenant}.dispatch`,
      'StartWorkflow:dispatch',
      'RunWorkflow:dispatch',
      // The call's activity (postRunWithInputBytes for an input of this size).
      'StartActivity:postRunWithInputBytes',
      'RunActivity:postRunWithInputBytes',
      'POST /v1/runs',
    ];
    const ofTrace = () => receiver.spans.filter((s) => s.traceId === traceId);
    await waitFor(() => names.every((n) => ofTrace().some((s) => s.name === n)), {
      timeoutMs: 30_000,
      what: `spans ${names.join(', ')} of trace ${traceId}`,
    }).catch((err: Error) => {
      const seen = receiver.spans.map(
        (s) => `${s.service}:${s.name}:${s.traceId === traceId ? 'this' : s.traceId}`,
      );
      throw new Error(`${err.message}; received ${seen.join(', ') || 'no span'}`);
    });
    const span = (name: string) => ofTrace().find((s) => s.name === name)!;
    // Each hop is the child of the one before: the record's producer → ingester → start → workflow → activity → call.
    expect(span(names[0]!).parentSpanId).toBe(producerSpan);
    expect(span(names[0]!).service).toBe('poimen-relay-ingester');
    expect(span('StartWorkflow:dispatch').parentSpanId).toBe(span(names[0]!).spanId);
    expect(span('RunWorkflow:dispatch').parentSpanId).toBe(span('StartWorkflow:dispatch').spanId);
    expect(span('StartActivity:postRunWithInputBytes').parentSpanId).toBe(
      span('RunWorkflow:dispatch').spanId,
    );
    expect(span('RunActivity:postRunWithInputBytes').parentSpanId).toBe(
      span('StartActivity:postRunWithInputBytes').spanId,
    );
    expect(span('POST /v1/runs').parentSpanId).toBe(span('RunActivity:postRunWithInputBytes').spanId);
    expect(span('POST /v1/runs').service).toBe('poimen-relay-worker');
    // What the API received is the call's own span.
    expect(apiParent).toBe(span('POST /v1/runs').spanId);
  });

  test('without an OTLP endpoint the record’s traceparent reaches the API as it came', async () => {
    h = await createHarness();
    await h.startWorker();
    await h.startIngester();
    const traceparent = `00-${crypto.randomBytes(16).toString('hex')}-${crypto.randomBytes(8).toString('hex')}-01`;
    await h.publish(h.dispatchValue('untraced-1'), { headers: { traceparent } });
    await waitFor(() => h.api.runs.has('untraced-1'), { timeoutMs: 60_000, what: 'the run' });
    expect(h.api.requestsFor('untraced-1')[0]!.headers.traceparent).toBe(traceparent);
  });
});
