import fs from 'node:fs';

/** Peak resident set size of a process (VmHWM), in MiB; undefined when it is gone. */
export function peakRssMiB(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round((Number(m[1]) / 1024) * 10) / 10 : undefined;
  } catch {
    return undefined;
  }
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx]!;
}

/** Runs `fn` over items with at most `limit` in flight. */
export async function mapLimit<T>(
  items: T[],
  limit: number,
  fn: (item: T, i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]!, i);
    }
  });
  await Promise.all(workers);
}

export const round = (x: number, digits = 1): number => Math.round(x * 10 ** digits) / 10 ** digits;
