/**
 * The Temporal SDK's own worker metrics (schedule-to-start latency, slots in use, poll results, request counts) on
 * the worker's /metrics beside the relay's: the SDK core buffers every update, and a drain every second (and
 * before each scrape) moves them into the relay's prom-client registry under the SDK's names (`temporal_…`).
 * The buffered exporter keeps them in this process: no second port, and an application embedding the worker
 * gets them in its own registry.
 */
import type { MetricsBuffer } from '@temporalio/worker';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** Seconds (the buffer is asked for seconds): from a local sync-match to a backlog that waits minutes. */
const DURATION_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

type Bridged = { kind: 'counter' | 'gauge' | 'histogram'; labels: string[]; m: Counter | Gauge | Histogram };

const DRAIN_EVERY_MS = 1_000;

export class SdkMetricsBridge {
  private readonly metrics = new Map<string, Bridged>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly buffer: MetricsBuffer,
    private readonly registry: Registry,
  ) {
    this.timer = setInterval(() => this.drain(), DRAIN_EVERY_MS);
    this.timer.unref();
  }

  /** Moves what the SDK buffered into the registry. */
  drain(): void {
    for (const { metric, value, attributes } of this.buffer.retrieveUpdates()) {
      const bridged = this.metricFor(metric.name, metric.kind, metric.description, Object.keys(attributes));
      if (!bridged) continue;
      // A label the metric was not declared with is dropped; one it lacks is empty (prom-client's labels are fixed).
      const labels = Object.fromEntries(bridged.labels.map((l) => [l, String(attributes[l] ?? '')]));
      if (bridged.kind === 'counter') (bridged.m as Counter).inc(labels, value);
      else if (bridged.kind === 'gauge') (bridged.m as Gauge).set(labels, value);
      else (bridged.m as Histogram).observe(labels, value);
    }
  }

  private metricFor(
    name: string,
    kind: string,
    help: string | undefined,
    labels: string[],
  ): Bridged | undefined {
    const known = this.metrics.get(name);
    if (known) return known;
    if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name)) return undefined;
    const labelNames = labels.filter((l) => /^[a-zA-Z_][a-zA-Z0-9_]*$/.test(l));
    const common = {
      name,
      help: help || `Temporal SDK metric ${name}`,
      labelNames,
      registers: [this.registry],
      // A scrape sees every update up to its moment, not only up to the last tick.
      collect: () => this.drain(),
    };
    let bridged: Bridged;
    if (kind === 'counter') bridged = { kind, labels: labelNames, m: new Counter(common) };
    else if (kind === 'histogram')
      bridged = { kind, labels: labelNames, m: new Histogram({ ...common, buckets: DURATION_BUCKETS_S }) };
    else bridged = { kind: 'gauge', labels: labelNames, m: new Gauge(common) };
    this.metrics.set(name, bridged);
    return bridged;
  }

  close(): void {
    clearInterval(this.timer);
  }
}
