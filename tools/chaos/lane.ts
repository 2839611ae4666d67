/**
 * The end of a soak beyond the main tenant's account: the budget lane's dead letters (each doomed dispatch
 * dead-lettered, under one id, though its DLQ refused writes when its budget ended), and every relay process
 * ready again once the faults are over.
 */
import type { RelayProcess } from '#devstack/relayProcess';
import { topics } from 'poimen-relay/internal/contract/index';
import { poll } from 'poimen-relay/internal/poll';
import type { RunsApiDouble } from '#devstack/runsApiDouble';
import { committedAtLogEnd } from '../bench/groupOffsets';
import { sourcesWithTwoIds } from './account';
import type { BudgetLane } from './combined';
import type { LaneAccount, SoakRun } from './types';
import { type SeenDlq, lagOf, readDlq } from './verdict';

const laneRun = (soak: SoakRun, lane: BudgetLane): SoakRun => ({
  ...soak,
  tenant: lane.tenant,
  groupId: lane.groupId,
});

const deadLettered = (seen: SeenDlq[], keys: string[]) => {
  const failed = new Set(seen.filter((d) => d.type === 'dispatch_failure').map((d) => d.dispatchKey));
  return keys.filter((k) => failed.has(k)).length;
};

/** Every doomed dispatch dead-lettered and the lane's group caught up. */
export async function laneDrained(soak: SoakRun, lane: BudgetLane): Promise<boolean> {
  const run = laneRun(soak, lane);
  const seen = await readDlq(run).catch(() => []);
  if (deadLettered(seen, lane.keys) < lane.keys.length) return false;
  return (await lagOf(run).catch(() => -1)) === 0;
}

export async function laneAccount(
  soak: SoakRun,
  lane: BudgetLane,
  api: RunsApiDouble,
): Promise<{ account: LaneAccount; sourcesWithTwoIds: number }> {
  const run = laneRun(soak, lane);
  const seen = await readDlq(run).catch(() => []);
  return {
    account: {
      doomed: lane.keys.length,
      dead_lettered: deadLettered(seen, lane.keys),
      runs: lane.keys.filter((k) => api.runs.has(k)).length,
      dlq: seen.length,
      committed_at_log_end: await committedAtLogEnd(
        soak.kafka,
        lane.groupId,
        [topics.dispatch(lane.tenant)],
        30_000,
      ),
      consumer_group_lag: await lagOf(run).catch(() => -1),
    },
    sourcesWithTwoIds: sourcesWithTwoIds(seen.filter((d) => d.id !== '')),
  };
}

/** Relay processes whose /readyz does not answer 200 within `graceMs` (in parallel). */
export async function notReady(
  relay: Record<string, RelayProcess | undefined>,
  graceMs = 60_000,
): Promise<string[]> {
  const late = await Promise.all(
    Object.entries(relay).map(async ([name, p]) => {
      if (!p) return name;
      const got = await poll(
        async () => {
          const res = await fetch(`http://127.0.0.1:${p.metricsPort}/readyz`);
          await res.body?.cancel();
          return res.status === 200;
        },
        { timeoutMs: graceMs, intervalMs: 1000, retryErrors: true },
      );
      return got.done ? undefined : name;
    }),
  );
  return late.filter((n): n is string => n !== undefined);
}
