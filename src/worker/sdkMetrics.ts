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

type Kind = 'counter' | 'up-down-counter' | 'gauge' | 'histogram';
type Bridged = { kind: Kind; m: Counter | Gauge | Histogram };

/**
 * Every attribute the SDK core puts on its worker and client metrics. prom-client fixes a metric's labels when it
 * is made, and the first update of a metric may lack some (a request before a task queue exists): declaring all of
 * them keeps a later update's labels. An attribute not listed is dropped.
 */
const SDK_LABELS = [
  'service_name',
  'namespace',
  'task_queue',
  'workflow_type',
  'activity_type',
  'worker_type',
  'poller_type',
  'operation',
  'status_code',
  'failure_reason',
  'eager',
];

const DRAIN_EVERY_MS = 1_000;

export class SdkMetricsBridge {
  private readonly metrics = new Map<string, Bridged>();
  /**
   * The label set of each attribute set the SDK sent. The SDK hands the same attributes object to every update of
   * the same set (and never changes one it has handed out), so a set is turned into labels once, not per update:
   * a dispatch brings dozens of updates over a handful of sets.
   */
  private readonly labelsOf = new WeakMap<object, Record<string, string>>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly buffer: MetricsBuffer,
    private readonly registry: Registry,
  ) {
    this.timer = setInterval(() => this.drain(), DRAIN_EVERY_MS);
    this.timer.unref();
  }

  /** Moves what the SDK buffered into the registry; never throws (it runs on a timer and inside a scrape). */
  drain(): void {
    let updates;
    try {
      updates = [...this.buffer.retrieveUpdates()];
    } catch {
      return; // the runtime is gone (shut down after its last worker)
    }
    for (const { metric, value, attributes } of updates) {
      try {
        const bridged = this.metricFor(metric.name, metric.kind, metric.description);
        if (!bridged) continue;
        const labels = this.labels(attributes);
        if (bridged.kind === 'counter') (bridged.m as Counter).inc(labels, value);
        else if (bridged.kind === 'up-down-counter') (bridged.m as Gauge).inc(labels, value);
        else if (bridged.kind === 'gauge') (bridged.m as Gauge).set(labels, value);
        else (bridged.m as Histogram).observe(labels, value);
      } catch {
        // One update the registry refuses (a name another kind holds) must not lose the others.
      }
    }
  }

  /** Every label is given: an attribute the update lacks is empty, which Prometheus treats as absent. */
  private labels(attributes: Record<string, unknown>): Record<string, string> {
    let labels = this.labelsOf.get(attributes);
    if (!labels) {
      labels = Object.fromEntries(
        SDK_LABELS.map((l) => [l, attributes[l] === undefined ? '' : String(attributes[l])]),
      );
      this.labelsOf.set(attributes, labels);
    }
    return labels;
  }

  private metricFor(name: string, kind: Kind, help: string | undefined): Bridged | undefined {
    const known = this.metrics.get(name);
    if (known) return known;
    if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name)) return undefined;
    // A worker made again in the same process (an embedding application) finds its metrics registered already.
    const existing = this.registry.getSingleMetric(name) as Counter | Gauge | Histogram | undefined;
    const common = {
      name,
      help: help || `Temporal SDK metric ${name}`,
      labelNames: SDK_LABELS,
      registers: [this.registry],
      // A scrape sees every update up to its moment, not only up to the last tick.
      collect: () => this.drain(),
    };
    let m: Counter | Gauge | Histogram;
    if (existing) m = existing;
    else if (kind === 'counter') m = new Counter(common);
    else if (kind === 'histogram') m = new Histogram({ ...common, buckets: DURATION_BUCKETS_S });
    else m = new Gauge(common);
    const bridged = { kind, m };
    this.metrics.set(name, bridged);
    return bridged;
  }

  close(): void {
    clearInterval(this.timer);
  }
}
