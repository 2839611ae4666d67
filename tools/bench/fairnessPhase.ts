/**
 * The fairness phase's rounds (docs/performance.md, "Fairness between tenants"): each on a fresh Temporal, each
 * with its own settings, and the figures the result reports from them. The mechanics of one round are in
 * ./fairness.ts.
 */
import { type FairnessOptions, fairnessRound, loneRound } from './fairness';
import type { LoneCloses } from './ingesterMetrics';
import { cpuMsPerDispatch } from './cpu';
import { percentile, round } from './measure';
import type { BenchTarget } from './rig';

/** The server's own default for `history.transferProcessorMaxPollRPS`, given back to one round. */
const SERVER_DEFAULT_POLL_RATE = ['history.transferProcessorMaxPollRPS=20'];
/** Admission off: the relay's default before fair shares, every record started as fast as the ingester goes. */
const UNBOUNDED = { POIMEN_INGEST_MAX_OPEN: '0' };

interface RoundSpec {
  name: string;
  /** Tenant A alone (its throughput), instead of B's latency beside A's flood. */
  lone?: boolean;
  serverFairness: boolean;
  dynamicConfig?: string[];
  /** The relay's settings beyond the addresses; {} is what ships. */
  settings(o: FairnessOptions): Record<string, string>;
  /** Admission off under A's flood: the round leaves thousands of executions queued, for a fresh server only. */
  leavesBacklog?: boolean;
}

// Fair shares off, as before them: the tuned rounds measure the fixed bound alone, comparable with earlier runs.
const tuned = (o: FairnessOptions) => ({
  ...UNBOUNDED,
  POIMEN_INGEST_TENANT_MAX_OPEN: String(o.tenantMaxOpen),
  POIMEN_KAFKA_FETCH_MAX_BYTES_PER_PARTITION: String(o.fetchMaxBytesPerPartition),
});

/**
 * The rounds: the shipped defaults (the headline), the tuned settings operations.md used to give (a fixed bound
 * per tenant and a fetch sized to the dispatches) and that with one thing changed each, admission off with and
 * without server fairness (the relay before fair shares), and tenant A alone with and without admission.
 */
const ROUNDS: readonly RoundSpec[] = [
  { name: 'default', serverFairness: true, settings: () => ({}) },
  // The shipped defaults with the fetch sized to the bench's small dispatches: what decoding refetches costs.
  {
    name: 'default_fetch64k',
    serverFairness: true,
    settings: (o) => ({ POIMEN_KAFKA_FETCH_MAX_BYTES_PER_PARTITION: String(o.fetchMaxBytesPerPartition) }),
  },
  { name: 'admission', serverFairness: true, settings: tuned },
  // The dev server's one shard reading its transfer queue at the server's default 20/s instead of the stack's 160/s
  // (devstack/stack/devServerTuning.ts): what that per-shard limit alone does to B.
  {
    name: 'admission_poll20',
    serverFairness: true,
    dynamicConfig: SERVER_DEFAULT_POLL_RATE,
    settings: tuned,
  },
  {
    name: 'admission_fetch1mib',
    serverFairness: true,
    settings: (o) => ({ ...UNBOUNDED, POIMEN_INGEST_TENANT_MAX_OPEN: String(o.tenantMaxOpen) }),
  },
  { name: 'on', serverFairness: true, settings: () => UNBOUNDED, leavesBacklog: true },
  { name: 'off', serverFairness: false, settings: () => UNBOUNDED, leavesBacklog: true },
  { name: 'lone_default', lone: true, serverFairness: true, settings: () => ({}) },
  { name: 'lone_unbounded', lone: true, serverFairness: true, settings: () => UNBOUNDED },
];
export const FAIRNESS_ROUNDS = ROUNDS.map((r) => r.name);
type Round = Awaited<ReturnType<typeof fairnessRound>>;
type Lone = Awaited<ReturnType<typeof loneRound>>;

/** A Temporal for one round: fresh, with or without task queue fairness, stopped after its round. */
export interface FairnessServers {
  /** `dynamicConfig`: key=value pairs given to the server after the stack's own (so they win). */
  start(fairness: boolean, dynamicConfig?: string[]): Promise<{ target: BenchTarget; stop(): Promise<void> }>;
  /** What each server is, for the result. */
  describe: string;
  /**
   * One server for every round (the cluster profile's own): only the rounds it can run as they are (fairness on,
   * its own settings, nothing left queued) run there.
   */
  shared?: boolean;
}

/**
 * B's warm-up on a shared server (the cluster profile's): a cluster started seconds before took 1.5-2.6 s per record
 * for the first seconds of B's alone window after a 5 s warm-up (tools/results/cluster-2026-12-04-fairness.json).
 */
const SHARED_WARMUP_S = 30;

/** Whether a round can run on a server shared by every round. */
const runsOnShared = (r: RoundSpec) => r.serverFairness && !r.dynamicConfig && !r.leavesBacklog;

export async function fairness(
  servers: FairnessServers,
  options: FairnessOptions,
  progress: (l: string) => void,
) {
  const o: FairnessOptions = servers.shared ? { warmupS: SHARED_WARMUP_S, ...options } : options;
  const rounds: Record<string, Round> = {};
  const lone: Record<string, MedianLone> = {};
  const onServer = async <T>(
    r: Pick<RoundSpec, 'serverFairness' | 'dynamicConfig'>,
    go: (t: BenchTarget) => Promise<T>,
  ) => {
    const server = await servers.start(r.serverFairness, r.dynamicConfig ?? []);
    try {
      return await go(server.target);
    } finally {
      await server.stop();
    }
  };
  const describe = (
    r: Pick<RoundSpec, 'serverFairness' | 'dynamicConfig'>,
    settings: Record<string, string>,
  ) => {
    const kv = [...(r.dynamicConfig ?? []), ...Object.entries(settings).map(([k, v]) => `${k}=${v}`)];
    return `server fairness ${r.serverFairness ? 'on' : 'off'}${kv.length ? `, ${kv.join(', ')}` : ', shipped defaults'}`;
  };
  const selected = ROUNDS.filter(
    (r) => (!o.rounds || o.rounds.includes(r.name)) && (!servers.shared || runsOnShared(r)),
  );
  for (const r of selected) {
    const settings = r.settings(o);
    if (!r.lone) {
      progress(
        `fairness ${r.name} (${describe(r, settings)}): tenant B at ${o.steadyPerS}/s, ${o.aloneS} s alone, then ${o.floodedS} s while tenant A floods ${o.floodN} records`,
      );
      rounds[r.name] = await onServer(r, (t) => fairnessRound(t, o, r.name, settings));
    }
  }
  // The lone rounds, interleaved and repeated: A B B A A B …, so neither gains from when it ran.
  const loneSpecs = selected.filter((r) => r.lone);
  const runs = new Map<string, Lone[]>(loneSpecs.map((r) => [r.name, []]));
  for (let i = 0; i < o.loneRepeats; i++) {
    for (const r of i % 2 === 0 ? loneSpecs : [...loneSpecs].reverse()) {
      const settings = r.settings(o);
      progress(
        `fairness ${r.name} ${i + 1}/${o.loneRepeats} (${describe(r, settings)}): tenant A alone publishes ${o.loneN} records at once`,
      );
      runs.get(r.name)!.push(await onServer(r, (t) => loneRound(t, o, r.name, settings)));
    }
  }
  for (const [name, each] of runs) lone[name] = medianLone(each);
  const sweep: Record<string, Round> = {};
  if (!servers.shared && (!o.rounds || o.rounds.includes('sweep'))) {
    for (const n of o.tenantMaxOpenSweep) {
      const settings = { ...tuned(o), POIMEN_INGEST_TENANT_MAX_OPEN: String(n) };
      const spec = { serverFairness: true };
      progress(`fairness admission-${n} (${describe(spec, settings)})`);
      sweep[String(n)] = await onServer(spec, (t) => fairnessRound(t, o, `admission-${n}`, settings));
    }
  }
  return {
    ...figures(rounds, lone),
    fairness_rounds: rounds,
    fairness_lone_rounds: lone,
    ...sweepFigures(sweep),
    fairness_settings: { ...o, servers: servers.describe },
  };
}

/**
 * A lone round over its runs: the median runs per second with every run's beside it; CPU per dispatch of each
 * process and what admission kept open while records waited in Kafka, both over all runs.
 */
interface MedianLone {
  n: number;
  runs: number;
  runs_per_s: number;
  runs_per_s_each: number[];
  cpu_ms_per_dispatch: ReturnType<typeof cpuMsPerDispatch>;
  /** null without admission (its gauge is not set). */
  open_while_backlogged: { min: number; median: number; max: number; samples: number } | null;
  /** A lone tenant's watches over the runs that counted them (`runs`), by what answered them; null if none did. */
  closes_seen: (Omit<LoneCloses, 'settled'> & { runs: number; settled: boolean }) | null;
}
export function medianLone(each: Lone[]): MedianLone {
  const rates = each.map((l) => l.runs_per_s);
  const open = each.flatMap((l) => l.open_samples).sort((x, y) => x - y);
  const median = (xs: number[]) =>
    percentile(
      [...xs].sort((x, y) => x - y),
      50,
    );
  return {
    n: each[0]!.n,
    runs: each.length,
    runs_per_s: median(rates),
    runs_per_s_each: rates,
    cpu_ms_per_dispatch: cpuMsPerDispatch(each.map((l) => ({ cpu_ms: l.cpu_ms, dispatches: l.served }))),
    open_while_backlogged: open.length
      ? { min: open[0]!, median: median(open), max: open.at(-1)!, samples: open.length }
      : null,
    closes_seen: closesOver(each.map((l) => l.closes_seen)),
  };
}

function closesOver(each: (LoneCloses | null)[]): MedianLone['closes_seen'] {
  const counted = each.filter((c): c is LoneCloses => c !== null);
  if (counted.length === 0) return null;
  return {
    visibility: counted.reduce((sum, c) => sum + c.visibility, 0),
    long_poll: counted.reduce((sum, c) => sum + c.long_poll, 0),
    runs: counted.length,
    settled: counted.every((c) => c.settled),
  };
}

const ratio = (r: Round) => round(r.flooded.p99_ms / r.alone.p99_ms, 2);

/** The result's fields of the rounds that ran, named by round (the tuned round keeps the unprefixed names). */
function figures(rounds: Record<string, Round>, lone: Record<string, MedianLone>) {
  const prefix: Record<string, string> = {
    default: 'fairness_default',
    admission: 'fairness',
    admission_poll20: 'fairness_poll20',
    admission_fetch1mib: 'fairness_fetch1mib',
    on: 'fairness_unbounded',
    off: 'fairness_off',
  };
  const out: Record<string, unknown> = {};
  for (const [name, r] of Object.entries(rounds)) {
    const p = prefix[name] ?? `fairness_${name}`;
    out[`${p}_b_p50_ms_alone`] = r.alone.p50_ms;
    out[`${p}_b_p99_ms_alone`] = r.alone.p99_ms;
    out[`${p}_b_p50_ms_flooded`] = r.flooded.p50_ms;
    out[`${p}_b_p99_ms_flooded`] = r.flooded.p99_ms;
    out[`${p}_p99_ratio`] = ratio(r);
    out[`${p}_a_runs_in_window`] = r.flood_runs_in_window;
  }
  // Records of B never served in the off round count with what they had waited: its figures are lower bounds.
  if (rounds.off) out.fairness_off_lower_bound = rounds.off.flooded.unserved > 0;
  for (const [name, l] of Object.entries(lone)) out[`fairness_${name}_runs_per_s`] = l.runs_per_s;
  // Work-conserving: a lone tenant's throughput with admission over without it (1 or more: not capped).
  if (lone.lone_default && lone.lone_unbounded && lone.lone_unbounded.runs_per_s > 0) {
    out.fairness_lone_ratio = round(lone.lone_default.runs_per_s / lone.lone_unbounded.runs_per_s, 2);
  }
  return out;
}

/** B's p99 ratio and A's runs in the window for each further bound: less open, B faster and A slower. */
function sweepFigures(sweep: Record<string, Round>) {
  return {
    fairness_sweep: Object.fromEntries(
      Object.entries(sweep).map(([n, r]) => [
        n,
        { p99_ratio: ratio(r), b_p99_ms_flooded: r.flooded.p99_ms, a_runs_in_window: r.flood_runs_in_window },
      ]),
    ),
    fairness_sweep_rounds: sweep,
  };
}
