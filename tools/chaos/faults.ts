/**
 * The fault controller: SIGKILLs and restarts the ingesters, the workers, the Kafka broker(s), the Temporal
 * server and on the cluster profile PostgreSQL (servers.ts) in seeded rounds, scripts the runs API's 503s and dropped sockets, and notes for the verdict which
 * faults may explain a 409 (fault windows) or a repeated dead letter (rewinds).
 */
import path from 'node:path';
import { topics } from 'poimen-relay/internal/contract/index';
import { freePort } from '#devstack/ports';
import { type RelayProcess, startRelayProcess } from '#devstack/relayProcess';
import type { Fault, RunsApiDouble } from '#devstack/runsApiDouble';
import type { FaultWindow, RewindWindow } from './account';
import {
  type BudgetLane,
  COMBINED_FAULTS,
  type CombinedFault,
  DOOMED_PREFIX,
  combinedFault,
  dueDuringDlqFault,
} from './combined';
import { serverFaults } from './servers';
import type { ClusterFaults, CombinedFaults, Kills, SoakOptions, SoakRun, Victim } from './types';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * How long an API answer can take to become the activity's recorded result (answer → worker → Temporal) on a
 * loaded 2-core machine; measured in milliseconds, bounded generously so a fault window is never too narrow.
 */
export const ANSWER_TO_COMPLETION_MS = 3000;
const between = (rnd: () => number, [lo, hi]: [number, number]) => lo + Math.floor(rnd() * (hi - lo));

/** Scripts the runs API's failures; returns the answers it dropped after admitting the run, per dispatch key. */
export function scriptApiFaults(
  api: RunsApiDouble,
  apiRnd: () => number,
  unavailable: number,
  drop: number,
): Map<string, number> {
  const droppedAfterAdmit = new Map<string, number>();
  api.faultPolicy((key): Fault | undefined => {
    // The budget lane's dispatches fail until their budget ends (drawn before the seeded answers, which replay).
    if (key?.startsWith(DOOMED_PREFIX)) return { kind: 'status', status: 503 };
    const r = apiRnd();
    if (r < unavailable) return { kind: 'status', status: 503 };
    // Half the drops happen after the run was admitted: the answer is lost, the retry must see 409.
    if (r < unavailable + drop / 2) return { kind: 'drop' };
    if (r < unavailable + drop) {
      if (key !== undefined) droppedAfterAdmit.set(key, (droppedAfterAdmit.get(key) ?? 0) + 1);
      return { kind: 'drop', afterAdmit: true };
    }
    return undefined;
  });
  return droppedAfterAdmit;
}

/**
 * The relay's processes, started and restarted by name (`worker-a`, `worker-b`, …, `ingester-N`), and with
 * `laneEnv` the budget lane's own ingester (`ingester-budget`, never killed).
 */
export function relayFleet(
  opts: Pick<SoakOptions, 'logsDir' | 'ingesters' | 'workers'>,
  run: string,
  env: NodeJS.ProcessEnv,
  laneEnv?: NodeJS.ProcessEnv,
) {
  const logFile = (name: string) => path.join(opts.logsDir, `chaos-${run}-${name}.log`);
  const ingesterNames = Array.from({ length: opts.ingesters ?? 2 }, (_, i) => `ingester-${i + 1}`);
  const workerNames = Array.from(
    { length: opts.workers ?? 2 },
    (_, i) => `worker-${String.fromCharCode(97 + (i % 26))}${i >= 26 ? Math.floor(i / 26) : ''}`,
  );
  const laneIngester = laneEnv ? BUDGET_INGESTER : undefined;
  const relay: Record<string, RelayProcess | undefined> = {};
  const startRelay = async (name: string) => {
    relay[name] = await startRelayProcess({
      role: name.startsWith('ingester') ? 'ingest' : 'worker',
      env: name === BUDGET_INGESTER && laneEnv ? laneEnv : env,
      metricsPort: await freePort(),
      logFile: logFile(name),
      readyTimeoutMs: 120_000,
    });
  };
  return { ingesterNames, workerNames, laneIngester, relay, startRelay };
}

const BUDGET_INGESTER = 'ingester-budget';

export type RelayFleet = ReturnType<typeof relayFleet>;

export interface FaultLog {
  kills: Kills;
  /** Cluster profile only: which broker roles were hit, how long the servers took to come back. */
  cluster?: ClusterFaults;
  faultWindows: FaultWindow[];
  /** One per ingester or broker kill; each resolves once the group has settled after it. */
  pendingRewinds: Promise<RewindWindow[]>[];
  /** With `combined`: the overlapping faults injected. */
  combined?: CombinedFaults;
  lastFaultEndMs: number;
  gap: [number, number];
  down: [number, number];
}

/** Kills until publishing is done and `faultSeconds` have passed since `faultStart`. */
export async function runFaults(
  opts: SoakOptions,
  soak: SoakRun,
  env: NodeJS.ProcessEnv,
  rnd: () => number,
  publisher: Promise<unknown>,
  fleet: RelayFleet,
  faultStart: number,
  lane?: { api: RunsApiDouble; lane: BudgetLane },
): Promise<FaultLog> {
  const say = opts.progress ?? (() => undefined);
  const { kafka, tenant, groupId } = soak;
  const { ingesterNames, workerNames, relay, startRelay } = fleet;
  const servers = serverFaults(opts, kafka, topics.dispatch(tenant), rnd);
  const kills: Kills = servers.victims.includes('postgres')
    ? { ingester: 0, worker: 0, kafka: 0, temporal: 0, postgres: 0, total: 0 }
    : { ingester: 0, worker: 0, kafka: 0, temporal: 0, total: 0 };
  let lastFaultEndMs = faultStart;
  const victims: (Victim | CombinedFault)[] = [
    'ingester',
    'worker',
    ...servers.victims,
    ...(lane ? COMBINED_FAULTS : []),
  ];
  const combined: CombinedFaults | undefined = lane
    ? { temporal_kafka: 0, temporal_rebalance: 0, dlq_budget: 0, dead_letters_due_in_dlq_fault: 0 }
    : undefined;
  const faultWindows: FaultWindow[] = [];
  const pendingRewinds: Promise<RewindWindow[]>[] = [];
  // The group's committed offsets now (a partition never committed counts from 0); retried through a restart.
  const committedNow = async (): Promise<Map<number, number>> => {
    for (;;) {
      const a = kafka.admin();
      try {
        await a.connect();
        const [c] = await a.fetchOffsets({ groupId, topics: [topics.dispatch(tenant)] });
        return new Map((c?.partitions ?? []).map((p) => [p.partition, Math.max(0, Number(p.offset))]));
      } catch {
        await sleep(500);
      } finally {
        await a.disconnect().catch(() => undefined);
      }
    }
  };
  // A rewind reaches every record uncommitted before the event and published until the group settled after
  // it (a killed member's partitions move only when its session expires).
  const settleMs = Number(env.POIMEN_KAFKA_SESSION_TIMEOUT_MS ?? 30_000) + 5_000;
  const rewindAfterSettle = async (before: Map<number, number>): Promise<RewindWindow[]> => {
    await sleep(settleMs);
    for (;;) {
      const a = kafka.admin();
      try {
        await a.connect();
        const high = await a.fetchTopicOffsets(topics.dispatch(tenant));
        return high.map((p) => ({
          partition: p.partition,
          from: before.get(p.partition) ?? 0,
          to: Number(p.high),
        }));
      } catch {
        await sleep(500);
      } finally {
        await a.disconnect().catch(() => undefined);
      }
    }
  };
  const gap = opts.faultGapMs ?? [2000, 6000];
  const down = opts.downMs ?? [200, 3000];
  let publishDone = false;
  void publisher.then(
    () => (publishDone = true),
    () => (publishDone = true),
  );
  // Every kind of fault at least once per round, in a random order per round.
  while (!publishDone || Date.now() - faultStart < opts.faultSeconds * 1000) {
    const round = [...victims].sort(() => rnd() - 0.5);
    for (const victim of round) {
      await sleep(between(rnd, gap));
      if (victim === 'temporal+kafka' || victim === 'temporal+rebalance' || victim === 'dlq+budget') {
        const committedBefore = await committedNow();
        say(`combined fault: ${victim}`);
        const got = await combinedFault(victim, {
          kafka,
          servers,
          api: lane!.api,
          lane: lane!.lane,
          killIngester: async () => {
            const which = ingesterNames[Math.floor(rnd() * ingesterNames.length)]!;
            say(`kill -9 ${which}`);
            await relay[which]?.kill();
            return () => startRelay(which);
          },
          hitKafka: (ms) => servers.hit('kafka', ms),
          settleMs,
          downMs: between(rnd, down),
          say,
        });
        if (got.temporalDown) {
          faultWindows.push({
            fromMs: got.temporalDown.fromMs - ANSWER_TO_COMPLETION_MS,
            toMs: got.temporalDown.toMs + ANSWER_TO_COMPLETION_MS,
            cause: 'temporal_outage',
          });
          kills.temporal++;
          kills.total++;
        }
        kills.kafka += got.kafkaKills;
        kills.ingester += got.ingesterKills;
        kills.total += got.kafkaKills + got.ingesterKills;
        pendingRewinds.push(rewindAfterSettle(committedBefore));
        const c = combined!;
        if (victim === 'temporal+kafka') c.temporal_kafka++;
        else if (victim === 'temporal+rebalance') c.temporal_rebalance++;
        else if (got.dlqFault) {
          c.dlq_budget++;
          c.dead_letters_due_in_dlq_fault += dueDuringDlqFault(got.dlqFault);
        }
        lastFaultEndMs = Date.now();
        continue;
      }
      const server = victim === 'ingester' || victim === 'worker' ? undefined : victim;
      // The dev soak draws a worker with one number (< 0.5: the first of two), so its seeds replay as before.
      const which =
        victim === 'worker'
          ? workerNames[Math.floor(rnd() * workerNames.length)]!
          : victim === 'ingester'
            ? ingesterNames[Math.floor(rnd() * ingesterNames.length)]!
            : victim;
      if (!server) say(`kill -9 ${which}`);
      const rewinds = victim === 'ingester' || victim === 'kafka';
      const committedBefore = rewinds ? await committedNow() : undefined;
      const killedAtMs = Date.now();
      if (server) {
        await servers.hit(server, between(rnd, down));
      } else {
        await relay[which]?.kill();
        await sleep(between(rnd, down));
        await startRelay(which);
      }
      if (victim === 'worker') {
        faultWindows.push({
          fromMs: killedAtMs - ANSWER_TO_COMPLETION_MS,
          toMs: killedAtMs,
          cause: 'worker_kill',
        });
      } else if (victim === 'temporal' || victim === 'postgres') {
        // Without its database the Temporal server cannot record an activity's result either.
        faultWindows.push({
          fromMs: killedAtMs - ANSWER_TO_COMPLETION_MS,
          toMs: Date.now() + ANSWER_TO_COMPLETION_MS,
          cause: victim === 'temporal' ? 'temporal_outage' : 'postgres_outage',
        });
      }
      if (committedBefore) pendingRewinds.push(rewindAfterSettle(committedBefore));
      kills[victim] = (kills[victim] ?? 0) + 1;
      kills.total++;
      lastFaultEndMs = Date.now();
    }
  }
  const cluster = servers.summary();
  return {
    kills,
    ...(cluster ? { cluster } : {}),
    ...(combined ? { combined } : {}),
    faultWindows,
    pendingRewinds,
    lastFaultEndMs,
    gap,
    down,
  };
}
