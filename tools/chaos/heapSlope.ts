/**
 * The endurance run's memory figures: the post-GC heap of a relay process, estimated from periodic samples of
 * its heap in use as the lowest sample of each window (the heap falls to its live size after a major GC and only
 * grows between collections, so a window holding a major GC has its minimum just after one), and its slope per
 * 100,000 records by least squares over the windows.
 */

export interface MemSample {
  /** Records through the relay (runs created at the API) when the sample was taken. */
  records: number;
  heapUsedBytes: number;
  rssBytes: number;
  /** Major (mark-compact) collections so far, from prom-client's nodejs_gc_duration_seconds_count{kind="major"}. */
  majorGcs: number;
}

export interface HeapPoint {
  records: number;
  heapMiB: number;
}

export interface Fit {
  /** MiB per 100,000 records. */
  slope: number;
  /** Standard error of the slope (same unit); undefined below three points. */
  stderr: number | undefined;
}

const MIB = 2 ** 20;

/** Least-squares slope of y over x, with its standard error. */
export function leastSquares(points: { x: number; y: number }[]): {
  slope: number;
  stderr: number | undefined;
} {
  const n = points.length;
  if (n < 2) return { slope: 0, stderr: undefined };
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  const sxx = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  if (sxx === 0) return { slope: 0, stderr: undefined };
  const slope = points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0) / sxx;
  if (n < 3) return { slope, stderr: undefined };
  const residual = points.reduce((s, p) => s + (p.y - my - slope * (p.x - mx)) ** 2, 0);
  return { slope, stderr: Math.sqrt(residual / (n - 2) / sxx) };
}

/**
 * Splits the samples into `windows` runs of equal record count, drops the first (warm-up: code and caches
 * filling) and those without a major GC (their minimum is not a post-GC heap), and keeps each window's lowest
 * heap sample.
 */
export function postGcPoints(samples: MemSample[], windows: number): HeapPoint[] {
  if (samples.length === 0 || windows < 2) return [];
  const first = samples[0]!.records;
  const span = samples[samples.length - 1]!.records - first;
  if (span <= 0) return [];
  const buckets: MemSample[][] = Array.from({ length: windows }, () => []);
  for (const s of samples) {
    const i = Math.min(windows - 1, Math.floor(((s.records - first) / span) * windows));
    buckets[i]!.push(s);
  }
  const points: HeapPoint[] = [];
  let gcsBefore = samples[0]!.majorGcs;
  buckets.forEach((b, i) => {
    if (b.length === 0) return;
    const gcs = b[b.length - 1]!.majorGcs;
    const collected = gcs > gcsBefore;
    gcsBefore = gcs;
    if (i === 0 || !collected) return;
    const low = b.reduce((m, s) => (s.heapUsedBytes < m.heapUsedBytes ? s : m));
    points.push({ records: low.records, heapMiB: low.heapUsedBytes / MIB });
  });
  return points;
}

/** The post-GC heap's slope in MiB per 100,000 records. */
export function heapSlope(points: HeapPoint[]): Fit {
  const fit = leastSquares(points.map((p) => ({ x: p.records / 100_000, y: p.heapMiB })));
  return { slope: fit.slope, stderr: fit.stderr };
}
