/** The fairness phase's lines in the bench's table: one per round that ran, the shipped defaults first. */
import type { FairnessOptions } from './fairness';
import { cpuRow } from './cpu';
import type { fairness } from './fairnessPhase';

type Figures = Awaited<ReturnType<typeof fairness>>;
type Round = Figures['fairness_rounds'][string];

const LABELS: Record<string, (o: FairnessOptions) => string> = {
  default: () => 'shipped defaults',
  default_fetch64k: (o) => `shipped defaults but fetch ${o.fetchMaxBytesPerPartition / 1024} KiB/partition`,
  admission: (o) =>
    `tuned: A ≤ ${o.tenantMaxOpen} open, fetch ${o.fetchMaxBytesPerPartition / 1024} KiB/partition`,
  admission_poll20: () => "… tuned, the dev server's shard reading its transfer queue at the default 20/s",
  admission_fetch1mib: () => '… tuned, with the default fetch per partition',
  on: () => 'admission off (POIMEN_INGEST_MAX_OPEN=0)',
  off: () => 'admission off, Temporal without fairness',
};

export function fairnessRows(f: Figures, o: FairnessOptions): [string, string][] {
  const row = (r: Round) =>
    `p50 ${r.alone.p50_ms} → ${r.flooded.p50_ms} ms, p99 ${r.alone.p99_ms} → ${r.flooded.p99_ms} ms; ` +
    `B p99 flooded ÷ alone ${round2(r.flooded.p99_ms / r.alone.p99_ms)}${r.flooded.unserved > 0 ? ` (≥: ${r.flooded.unserved} of ${r.flooded.n} never served)` : ''}; ` +
    `A's runs in the window ${r.flood_runs_in_window}`;
  const rows: [string, string][] = [];
  for (const [name, r] of Object.entries(f.fairness_rounds)) {
    rows.push([`fairness (B alone → A flooding ${o.floodN}), ${LABELS[name]?.(o) ?? name}`, row(r)]);
  }
  for (const [n, x] of Object.entries(f.fairness_sweep)) {
    rows.push([
      `… tuned with A ≤ ${n} open`,
      `B p99 flooded ÷ alone ${x.p99_ratio}, A's runs in the window ${x.a_runs_in_window}`,
    ]);
  }
  for (const [name, l] of Object.entries(f.fairness_lone_rounds)) {
    rows.push([
      `fairness: tenant A alone, ${o.loneN} records, ${name === 'lone_default' ? 'shipped defaults' : 'admission off'}`,
      `${l.runs_per_s} runs/s${l.runs_per_s_each && l.runs_per_s_each.length > 1 ? ` (median of ${l.runs_per_s_each.join(', ')})` : ''}` +
        (l.cpu_ms_per_dispatch ? `; CPU ms per dispatch ${cpuRow(l.cpu_ms_per_dispatch)}` : '') +
        (l.open_while_backlogged
          ? `; open while records waited in Kafka: ${l.open_while_backlogged.min} to ${l.open_while_backlogged.max}, median ${l.open_while_backlogged.median}`
          : '') +
        (l.closes_seen
          ? `; lone watches answered by visibility ${l.closes_seen.visibility}, by long poll ${l.closes_seen.long_poll} (${l.closes_seen.runs} runs${l.closes_seen.settled ? '' : ', read before every dispatch closed'})`
          : ''),
    ]);
  }
  return rows;
}

const round2 = (x: number) => Math.round(x * 100) / 100;
