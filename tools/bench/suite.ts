/**
 * The throughput, latency and memory phases of `npm run bench`, run in their fixed order (main.ts adds the
 * outage phase and the codecs): each selected phase adds its figures to one flat record and its lines to the
 * printed table, under the same keys whether the whole bench runs or a subset.
 */
import { CPU_ROLES, type RoleFigures, cpuAboveIdle, cpuMsPerDispatch, cpuRow } from './cpu';
import { round } from './measure';
import { costRow } from './temporalCost';
import { type FairnessServers, fairness } from './fairnessPhase';
import { fairnessRows } from './fairnessRows';
import { type BenchTarget, baseline, ceiling, ingesterMemory, latency, relayDrain } from './phases';

export const PHASES = [
  'relay',
  'baseline',
  'latency',
  'memory',
  'scaling',
  'fairness',
  'outage',
  'codecs',
] as const;
export type Phase = (typeof PHASES)[number];

/** The ceiling's start concurrency: 16 beat 64 in every run here (starts compete with execution on the server). */
const CEILING_CONCURRENCY = 16;
/** Worker processes of the relay drain; the outage phase uses the same so their rates compare. */
export const RELAY_WORKERS = 1;

export const SIZES = {
  quick: {
    n: 600,
    rounds: 1,
    latencyS: 15,
    memBacklog: 20_000,
    memWindowS: 20,
    scaleN: 300,
    outageN: 300,
    outageS: 15,
    fairness: {
      floodN: 2000,
      steadyPerS: 5,
      aloneS: 15,
      floodedS: 15,
      settleS: 30,
      partitions: 4,
      tenantMaxOpen: 4,
      tenantMaxOpenSweep: [],
      fetchMaxBytesPerPartition: 64 * 1024,
      loneN: 1000,
      loneRepeats: 1,
    },
  },
  full: {
    n: 3000,
    rounds: 2,
    latencyS: 60,
    memBacklog: 100_000,
    memWindowS: 60,
    scaleN: 1000,
    outageN: 2000,
    outageS: 60,
    fairness: {
      floodN: 20_000,
      steadyPerS: 5,
      aloneS: 60,
      floodedS: 60,
      settleS: 120,
      partitions: 4,
      tenantMaxOpen: 4,
      tenantMaxOpenSweep: [2, 16],
      fetchMaxBytesPerPartition: 64 * 1024,
      loneN: 3000,
      loneRepeats: 3,
    },
  },
};

export interface Report {
  fields: Record<string, unknown>;
  rows: [string, string][];
  /** Whether each relay drain ended with its group committed to the log end (no tail left to redeliver). */
  atLogEnd: boolean[];
}

/** Seconds every process is watched after each relay drain, with nothing left to do: its idle CPU. */
const IDLE_TAIL_S = 10;
/** Starts one at a time before the ceiling: the round trip of a start on a lightly loaded server. */
const LIGHT_START_N = 100;

const nullFigures: RoleFigures = {
  ingester: null,
  worker: null,
  temporal: null,
  postgres: null,
  kafka: null,
};

/** Each role's mean over several readings; null where any reading lacks it. */
function meanFigures(xs: RoleFigures[]): RoleFigures {
  const out = { ...nullFigures };
  for (const role of CPU_ROLES) {
    const vs = xs.map((x) => x[role]);
    if (xs.length > 0 && !vs.includes(null))
      out[role] = round(vs.reduce<number>((a, b) => a + (b ?? 0), 0) / xs.length);
  }
  return out;
}

export interface SideTargets {
  /** Where the memory phase runs (dev: a throwaway in-memory dev server, so the backlog phase leaves nothing). */
  memory?: BenchTarget;
  /** The in-memory dev server that the scaling phase compares persistence with; none on the cluster. */
  persistence?: BenchTarget;
  /** Why persistence is absent, recorded in the result instead of the comparison. */
  persistenceSkipped?: string;
  /** Fresh Temporal servers with and without fairness, one per round of the fairness phase. */
  fairness?: FairnessServers;
  fairnessSkipped?: string;
}

export async function runSuite(
  phases: Set<Phase>,
  size: (typeof SIZES)['full'],
  main: BenchTarget,
  side: SideTargets,
  progress: (line: string) => void,
): Promise<Report> {
  const fields: Record<string, unknown> = {};
  const rows: [string, string][] = [];
  const atLogEnd: boolean[] = [];
  const workerRss: number[] = [];
  const mean = (xs: number[]) => round(xs.reduce((a, b) => a + b, 0) / xs.length);
  let relayPerS: number | undefined;

  if (phases.has('relay')) {
    // Ceiling and relay alternate: the SQLite database grows with every phase and the machine's load drifts,
    // so measuring one after the other would hand the earlier phase an advantage. Each figure is the mean of
    // its rounds; the runs are kept in the result.
    progress(`start latency: ${LIGHT_START_N} dispatch workflows started one at a time`);
    const light = await ceiling(main, LIGHT_START_N, 1, 1);
    const ceilings: Awaited<ReturnType<typeof ceiling>>[] = [];
    const relays = [];
    for (let r = 1; r <= size.rounds; r++) {
      progress(
        `ceiling ${r}/${size.rounds}: ${size.n} dispatch workflows started directly (concurrency ${CEILING_CONCURRENCY})`,
      );
      ceilings.push(await ceiling(main, size.n, CEILING_CONCURRENCY, 1));
      progress(`relay ${r}/${size.rounds}: draining ${size.n} pre-loaded records (1 ingester, 1 worker)`);
      relays.push(
        await relayDrain(main, size.n, {
          workers: RELAY_WORKERS,
          partitions: 4,
          idleTailS: IDLE_TAIL_S,
          cost: true,
        }),
      );
    }
    const ceilingPerS = mean(ceilings.map((c) => c.per_s));
    relayPerS = mean(relays.map((x) => x.per_s));
    atLogEnd.push(...relays.map((x) => x.committed_at_log_end));
    workerRss.push(...relays.map((x) => x.worker_rss_mib));
    const cpuPerDispatch = cpuMsPerDispatch(
      relays.map((x) => ({ cpu_ms: x.cpu_ms, dispatches: x.cpu_dispatches })),
    );
    const loaded = (p: 'p50' | 'p95' | 'p99') => mean(ceilings.map((c) => c.start_ms[p]));
    const aboveIdle = cpuAboveIdle(
      relays.map((x) => ({ ...x, idle_cpu_ms_per_s: x.idle_cpu_ms_per_s ?? nullFigures })),
    );
    const idle = meanFigures(relays.map((x) => x.idle_cpu_ms_per_s ?? nullFigures));
    Object.assign(fields, {
      ceiling_per_s: ceilingPerS,
      relay_per_s: relayPerS,
      relay_over_ceiling: round(relayPerS / ceilingPerS, 3),
      amplification: Math.max(...relays.map((x) => x.amplification)),
      cpu_ms_per_dispatch: cpuPerDispatch,
      idle_cpu_ms_per_s: idle,
      cpu_ms_per_dispatch_above_idle: aboveIdle,
      start_latency_ms: {
        one_at_a_time: light.start_ms,
        [`concurrency_${CEILING_CONCURRENCY}`]: {
          p50: loaded('p50'),
          p95: loaded('p95'),
          p99: loaded('p99'),
        },
      },
      // Counts, the same in every round of the same code: the last round's (each round's is in relay_runs).
      dispatch_cost: relays.at(-1)?.dispatch_cost,
      ingester_rss_during_drain_mib: Math.max(...relays.map((x) => x.ingester_rss_mib ?? 0)),
      ceiling_runs: ceilings,
      relay_runs: relays,
    });
    rows.push(
      [
        'ceiling (bare Temporal)',
        `${ceilingPerS}/s (mean of ${size.rounds}: ${ceilings.map((c) => c.per_s).join(', ')})`,
      ],
      [
        'relay (Kafka → ingester → Temporal → API)',
        `${relayPerS}/s = ${String(fields.relay_over_ceiling)} × ceiling (runs: ${relays.map((x) => x.per_s).join(', ')})`,
      ],
      ['amplification (POSTs per dispatch)', String(fields.amplification)],
      ['CPU per dispatch over the relay drain', cpuRow(cpuPerDispatch)],
      [`idle after the drain, CPU ms/s (${IDLE_TAIL_S} s)`, cpuRow(idle).replace(/ ms$/, ' ms/s')],
      ['CPU per dispatch above idle', cpuRow(aboveIdle)],
      [
        'cost of a dispatch (last relay round)',
        relays.at(-1)?.dispatch_cost ? costRow(relays.at(-1)!.dispatch_cost!) : '—',
      ],
      [
        'start round trip p50 / p99',
        `${light.start_ms.p50} / ${light.start_ms.p99} ms one at a time, ${loaded('p50')} / ${loaded('p99')} ms at ${CEILING_CONCURRENCY}`,
      ],
    );
  }

  if (phases.has('baseline')) {
    progress(`baseline: plain kafkajs → undici consumer, ${size.n} records`);
    const base = await baseline(main, size.n, 4);
    fields.baseline_per_s = base.per_s;
    fields.baseline_rss_mib = base.rss_mib;
    const vs = relayPerS === undefined ? '' : `; relay = ${round(relayPerS / base.per_s, 3)} × baseline`;
    if (relayPerS !== undefined) fields.relay_over_baseline = round(relayPerS / base.per_s, 3);
    rows.push(['baseline (kafkajs → undici, no Temporal)', `${base.per_s}/s${vs}`]);
  }

  if (phases.has('latency') && relayPerS !== undefined) {
    const rate = Math.max(1, Math.round(relayPerS / 2));
    progress(`latency: ${rate}/s offered for ${size.latencyS} s`);
    const lat = await latency(main, rate, size.latencyS, 1);
    Object.assign(fields, {
      latency_offered_per_s: lat.offered_per_s,
      latency_p50_ms: lat.p50_ms,
      latency_p95_ms: lat.p95_ms,
      latency_p99_ms: lat.p99_ms,
    });
    rows.push([
      `latency at ${lat.offered_per_s}/s`,
      `p50 ${lat.p50_ms} ms, p95 ${lat.p95_ms} ms, p99 ${lat.p99_ms} ms`,
    ]);
  }

  if (phases.has('memory') && side.memory) {
    progress(`memory: ingester with a ${size.memBacklog}-record backlog (${size.memWindowS} s window)`);
    const mem = await ingesterMemory(side.memory, size.memBacklog, size.memWindowS);
    workerRss.push(mem.worker_rss_mib ?? 0);
    fields.ingester_rss_mib = mem.ingester_rss_mib;
    fields.memory_backlog = mem;
    rows.push([`ingester peak RSS (${size.memBacklog} backlog)`, `${mem.ingester_rss_mib} MiB`]);
  }
  if (workerRss.length > 0) {
    fields.worker_rss_mib = Math.max(...workerRss);
    rows.push(['worker peak RSS', `${String(fields.worker_rss_mib)} MiB`]);
  }

  if (phases.has('scaling')) {
    const scaling: Record<string, number | string> = {};
    for (const w of [1, 2, 4]) {
      progress(`scaling: ${w} worker(s), ${size.scaleN} records`);
      const drain = await relayDrain(main, size.scaleN, { workers: w, partitions: 4 });
      scaling[`workers_${w}_per_s`] = drain.per_s;
      atLogEnd.push(drain.committed_at_log_end);
    }
    rows.push([
      'scaling 1 / 2 / 4 workers',
      `${scaling.workers_1_per_s} / ${scaling.workers_2_per_s} / ${scaling.workers_4_per_s} /s`,
    ]);
    if (side.persistence) {
      progress(`persistence: in-memory Temporal, ${size.scaleN} records`);
      const memDrain = await relayDrain(side.persistence, size.scaleN, { workers: 1, partitions: 4 });
      scaling.memory_persistence_per_s = memDrain.per_s;
      atLogEnd.push(memDrain.committed_at_log_end);
      scaling.sqlite_wal_persistence_per_s = scaling.workers_1_per_s!;
      rows.push([
        'Temporal in memory vs SQLite WAL',
        `${scaling.memory_persistence_per_s} vs ${scaling.sqlite_wal_persistence_per_s} /s`,
      ]);
    } else if (side.persistenceSkipped) {
      scaling.persistence_comparison = `skipped: ${side.persistenceSkipped}`;
      rows.push(['Temporal persistence comparison', `skipped: ${side.persistenceSkipped}`]);
    }
    fields.scaling = scaling;
  }
  if (phases.has('fairness') && side.fairness) {
    const f = await fairness(side.fairness, size.fairness, progress);
    Object.assign(fields, f);
    rows.push(...fairnessRows(f, size.fairness));
  } else if (phases.has('fairness') && side.fairnessSkipped) {
    fields.fairness = `skipped: ${side.fairnessSkipped}`;
    rows.push(['fairness', `skipped: ${side.fairnessSkipped}`]);
  }
  return { fields, rows, atLogEnd };
}
