/**
 * The endurance run's summary table and result file (tools/results/endurance[-cluster]-<date>-<records>.json);
 * exits 1 when a record was lost or the group's offsets stopped short of the log end.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { StackProfile } from '#devstack/stack/profiles';
import { PACKAGE_ROOT } from 'poimen-relay/internal/version';
import type { EnduranceResult } from './endurance';

/** The default size: a million records, hours on a small machine. */
export const ENDURANCE_RECORDS = 1_000_000;

export function reportEndurance(profile: StackProfile, r: EnduranceResult): void {
  const out = {
    date: new Date().toISOString(),
    profile,
    ...r,
    post_gc_heap_estimate:
      'lowest nodejs_heap_size_used_bytes sample of each of `windows` equal record spans; the first span (warm-up) and spans without a major GC are left out',
    machine: {
      cores: os.cpus().length,
      memory_gib: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
    },
  };
  process.stdout.write(
    `\npoimen-relay endurance (${profile} profile): ${r.runs}/${r.records} records, ${r.records_per_s}/s\n`,
  );
  process.stdout.write(`  lost ${r.lost}; committed offsets at the log end ${r.committed_at_log_end}\n`);
  for (const p of r.processes) {
    const err = p.heap_slope_stderr === null ? '' : ` ± ${p.heap_slope_stderr}`;
    process.stdout.write(
      `  ${p.name.padEnd(12)} post-GC heap ${p.post_gc_heap_mib.first} → ${p.post_gc_heap_mib.last} MiB, slope ${p.heap_slope_mib_per_100k_records}${err} MiB/100k records (${p.post_gc_windows} windows, ${p.major_gcs} major GCs); RSS ${p.rss_mib.first} → ${p.rss_mib.last} MiB (max ${p.rss_mib.max})\n`,
    );
  }
  const dir = path.join(PACKAGE_ROOT, 'tools', 'results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(
    dir,
    `endurance-${profile === 'cluster' ? 'cluster-' : ''}${out.date.slice(0, 10)}-${r.records}.json`,
  );
  fs.writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
  process.stdout.write(`\nwritten to ${path.relative(process.cwd(), file)}\n`);
  if (r.lost > 0 || !r.committed_at_log_end) {
    process.stderr.write(
      `chaos: endurance FAILED: ${r.lost} lost, committed at log end ${r.committed_at_log_end}\n`,
    );
    process.exit(1);
  }
}
