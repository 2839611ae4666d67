/**
 * The fairness phase's rounds (docs/performance.md, "Fairness between tenants"): each on a fresh Temporal, each
 * changing one thing against the design, and the figures the result reports from them. The mechanics of one
 * round are in ./fairness.ts.
 */
import { type FairnessOptions, fairnessRound } from './fairness';
import { round } from './measure';
import type { BenchTarget } from './rig';

/**
 * The rounds, each on a fresh Temporal: admission per tenant with server fairness and the fetch sized to the
 * bench's small dispatches (the design as operations.md tells an operator to set it), then the same with one
 * thing changed each, then server fairness alone (the design before admission), and neither (first come, first
 * served, as before both).
 */
const ROUNDS = [
  {
    name: 'admission',
    serverFairness: true,
    admission: true,
    serverDefaultPollRate: false,
    fetch1MiB: false,
  },
  // The same with the dev server's one shard reading its transfer queue at the server's default 20/s instead of the
  // stack's 160/s (devstack/stack/devServerTuning.ts): what that per-shard limit alone does to B.
  {
    name: 'admission_poll20',
    serverFairness: true,
    admission: true,
    serverDefaultPollRate: true,
    fetch1MiB: false,
  },
  // The same with the ingester's default fetch of 1 MiB per partition instead of one sized to the dispatches.
  {
    name: 'admission_fetch1mib',
    serverFairness: true,
    admission: true,
    serverDefaultPollRate: false,
    fetch1MiB: true,
  },
  { name: 'on', serverFairness: true, admission: false, serverDefaultPollRate: false, fetch1MiB: false },
  { name: 'off', serverFairness: false, admission: false, serverDefaultPollRate: false, fetch1MiB: false },
] as const;
/** The server's own default for `history.transferProcessorMaxPollRPS`, given back to one round. */
const SERVER_DEFAULT_POLL_RATE = ['history.transferProcessorMaxPollRPS=20'];
type RoundName = (typeof ROUNDS)[number]['name'];
type Round = Awaited<ReturnType<typeof fairnessRound>>;

/** A Temporal for one round: fresh, with or without task queue fairness, stopped after its round. */
export interface FairnessServers {
  /** `dynamicConfig`: key=value pairs given to the server after the stack's own (so they win). */
  start(fairness: boolean, dynamicConfig?: string[]): Promise<{ target: BenchTarget; stop(): Promise<void> }>;
  /** What each server is, for the result. */
  describe: string;
}

export async function fairness(servers: FairnessServers, o: FairnessOptions, progress: (l: string) => void) {
  const rounds: Record<RoundName, Round> = {} as never;
  const run = async (
    label: string,
    serverFairness: boolean,
    maxOpen: number,
    dynamicConfig: string[] = [],
    env: Record<string, string> = {},
  ) => {
    const settings = [...dynamicConfig, ...Object.entries(env).map(([k, v]) => `${k}=${v}`)];
    progress(
      `fairness ${label} (server fairness ${serverFairness ? 'on' : 'off'}, POIMEN_INGEST_TENANT_MAX_OPEN=${maxOpen}${settings.map((kv) => `, ${kv}`).join('')}): tenant B at ${o.steadyPerS}/s, ${o.aloneS} s alone, then ${o.floodedS} s while tenant A floods ${o.floodN} records`,
    );
    const server = await servers.start(serverFairness, dynamicConfig);
    try {
      return await fairnessRound(server.target, o, label, maxOpen, env);
    } finally {
      await server.stop();
    }
  };
  const sizedFetch = { POIMEN_KAFKA_FETCH_MAX_BYTES_PER_PARTITION: String(o.fetchMaxBytesPerPartition) };
  for (const r of ROUNDS) {
    rounds[r.name] = await run(
      r.name,
      r.serverFairness,
      r.admission ? o.tenantMaxOpen : 0,
      r.serverDefaultPollRate ? SERVER_DEFAULT_POLL_RATE : [],
      r.admission && !r.fetch1MiB ? sizedFetch : {},
    );
  }
  const sweep: Record<string, Round> = {};
  for (const n of o.tenantMaxOpenSweep)
    sweep[String(n)] = await run(`admission-${n}`, true, n, [], sizedFetch);
  const ratio = (r: (typeof rounds)['on']) => round(r.flooded.p99_ms / r.alone.p99_ms, 2);
  return {
    fairness_b_p50_ms_alone: rounds.admission.alone.p50_ms,
    fairness_b_p99_ms_alone: rounds.admission.alone.p99_ms,
    fairness_b_p50_ms_flooded: rounds.admission.flooded.p50_ms,
    fairness_b_p99_ms_flooded: rounds.admission.flooded.p99_ms,
    fairness_p99_ratio: ratio(rounds.admission),
    // The same design on a dev server whose one shard reads its transfer queue at the server's default rate.
    fairness_poll20_b_p99_ms_alone: rounds.admission_poll20.alone.p99_ms,
    fairness_poll20_b_p99_ms_flooded: rounds.admission_poll20.flooded.p99_ms,
    fairness_poll20_p99_ratio: ratio(rounds.admission_poll20),
    // The same design with the ingester's default fetch of 1 MiB per partition.
    fairness_fetch1mib_b_p99_ms_alone: rounds.admission_fetch1mib.alone.p99_ms,
    fairness_fetch1mib_b_p99_ms_flooded: rounds.admission_fetch1mib.flooded.p99_ms,
    fairness_fetch1mib_p99_ratio: ratio(rounds.admission_fetch1mib),
    // Server fairness without admission per tenant: the design before admission.
    fairness_unbounded_b_p99_ms_alone: rounds.on.alone.p99_ms,
    fairness_unbounded_b_p99_ms_flooded: rounds.on.flooded.p99_ms,
    fairness_unbounded_p99_ratio: ratio(rounds.on),
    // The same phase on a Temporal without fairness: every task of the queue first come, first served.
    fairness_off_b_p99_ms_alone: rounds.off.alone.p99_ms,
    fairness_off_b_p99_ms_flooded: rounds.off.flooded.p99_ms,
    fairness_off_p99_ratio: ratio(rounds.off),
    // Records of B never served in the off round count with what they had waited: its figures are lower bounds.
    fairness_off_lower_bound: rounds.off.flooded.unserved > 0,
    fairness_rounds: rounds,
    // B's p99 ratio and A's runs in the window for each further bound: less open, B faster and A slower.
    fairness_sweep: Object.fromEntries(
      Object.entries(sweep).map(([n, r]) => [
        n,
        { p99_ratio: ratio(r), b_p99_ms_flooded: r.flooded.p99_ms, a_runs_in_window: r.flood_runs_in_window },
      ]),
    ),
    fairness_sweep_rounds: sweep,
    fairness_settings: { ...o, servers: servers.describe },
  };
}
