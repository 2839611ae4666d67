/**
 * The tracing port's promises that need no services: with the relay's tracing off, an application's own
 * OpenTelemetry provider does not take over the relay's hop; the SDK metrics bridge keeps every label and never
 * throws. End to end: test/it_tracing.test.ts and it_metrics_conventions.
 */
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import type { MetricsBuffer } from '@temporalio/worker';
import { Registry } from 'prom-client';
import { SpanKind, inSpan } from '../../src/tracing/tracing';
import { SdkMetricsBridge } from '../../src/worker/sdkMetrics';

test("with the relay's tracing off, an application's global provider records nothing of the relay and no traceparent replaces the record's", async () => {
  const appProvider = new BasicTracerProvider();
  trace.setGlobalTracerProvider(appProvider);
  try {
    const seen = await inSpan('POST /v1/runs', { kind: SpanKind.CLIENT }, async (traceparent, span) => ({
      traceparent,
      recording: span.isRecording(),
    }));
    expect(seen).toEqual({ traceparent: undefined, recording: false });
  } finally {
    trace.disable();
  }
});

function bufferOf(...batches: unknown[][]): MetricsBuffer {
  return { retrieveUpdates: () => (batches.shift() ?? [])[Symbol.iterator]() } as unknown as MetricsBuffer;
}

test('the SDK metrics bridge keeps labels a later update brings, adds counter deltas, sets gauges and observes histograms', async () => {
  const registry = new Registry();
  const req = { name: 'temporal_request', kind: 'counter', valueType: 'int' };
  const slots = { name: 'temporal_worker_task_slots_used', kind: 'gauge', valueType: 'int' };
  const lat = { name: 'temporal_activity_schedule_to_start_latency', kind: 'histogram', valueType: 'float' };
  const bridge = new SdkMetricsBridge(
    bufferOf(
      [{ metric: req, value: 1, attributes: { operation: 'GetSystemInfo' } }],
      [
        {
          metric: req,
          value: 2,
          attributes: { operation: 'PollActivityTaskQueue', task_queue: 'q', namespace: 'default' },
        },
        { metric: slots, value: 3, attributes: { worker_type: 'ActivityWorker', task_queue: 'q' } },
        { metric: slots, value: 5, attributes: { worker_type: 'ActivityWorker', task_queue: 'q' } },
        { metric: lat, value: 0.02, attributes: { task_queue: 'q' } },
      ],
    ),
    registry,
  );
  try {
    bridge.drain();
    bridge.drain();
    const text = await registry.metrics();
    expect(text).toMatch(/^temporal_request\{[^}]*operation="GetSystemInfo"[^}]*\} 1$/m);
    expect(text).toMatch(
      /^temporal_request\{[^}]*namespace="default"[^}]*task_queue="q"[^}]*operation="PollActivityTaskQueue"[^}]*\} 2$/m,
    );
    expect(text).toMatch(
      /^temporal_worker_task_slots_used\{[^}]*task_queue="q"[^}]*worker_type="ActivityWorker"[^}]*\} 5$/m,
    );
    expect(text).toMatch(
      /^temporal_activity_schedule_to_start_latency_bucket\{le="0.025"[^}]*task_queue="q"[^}]*\} 1$/m,
    );
  } finally {
    bridge.close();
  }
});

test('a buffer that throws (the runtime shut down) and an update the registry refuses do not throw out of a drain', () => {
  const registry = new Registry();
  const throwing = new SdkMetricsBridge(
    {
      retrieveUpdates: () => {
        throw new Error('runtime gone');
      },
    } as unknown as MetricsBuffer,
    registry,
  );
  expect(() => throwing.drain()).not.toThrow();
  throwing.close();
  const bad = new SdkMetricsBridge(
    bufferOf([
      { metric: { name: 'temporal_x', kind: 'counter' }, value: -1, attributes: {} },
      { metric: { name: 'temporal_y', kind: 'counter' }, value: 1, attributes: {} },
    ]),
    registry,
  );
  expect(() => bad.drain()).not.toThrow();
  bad.close();
  return registry.metrics().then((text) => expect(text).toMatch(/^temporal_y\{[^}]*\} 1$/m));
});

test('the SDK metrics bridge turns an attribute set into labels once, however many updates reuse it', async () => {
  const registry = new Registry();
  const req = { name: 'temporal_request', kind: 'counter', valueType: 'int' };
  let reads = 0;
  // The SDK hands the same attributes object to every update of the same set.
  const attributes = new Proxy(
    { operation: 'PollActivityTaskQueue', task_queue: 'q' } as Record<string, string>,
    {
      get: (target, key: string) => {
        reads++;
        return target[key];
      },
    },
  );
  const other = { operation: 'RespondActivityTaskCompleted', task_queue: 'q' };
  const updates = [1, 2, 3].map((value) => ({ metric: req, value, attributes }));
  const bridge = new SdkMetricsBridge(
    bufferOf([...updates, { metric: req, value: 5, attributes: other }], [...updates]),
    registry,
  );
  try {
    bridge.drain();
    bridge.drain();
    const readsOfOneSet = reads;
    expect(readsOfOneSet).toBeGreaterThan(0);
    const text = await registry.metrics();
    expect(text).toMatch(
      /^temporal_request\{[^}]*task_queue="q"[^}]*operation="PollActivityTaskQueue"[^}]*\} 12$/m,
    );
    expect(text).toMatch(
      /^temporal_request\{[^}]*task_queue="q"[^}]*operation="RespondActivityTaskCompleted"[^}]*\} 5$/m,
    );
    // Six updates of the set, read as often as one.
    const once = new SdkMetricsBridge(bufferOf([{ metric: req, value: 1, attributes }]), new Registry());
    reads = 0;
    once.drain();
    once.close();
    expect(readsOfOneSet).toBe(reads);
  } finally {
    bridge.close();
  }
});
