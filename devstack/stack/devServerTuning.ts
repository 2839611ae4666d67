/**
 * What the dev profile's Temporal (`temporal server start-dev`, one history shard) is given beyond its defaults so
 * that it behaves like a small production cluster where it otherwise would not.
 *
 * `history.transferProcessorMaxPollRPS` caps how often ONE shard reads its transfer queue (default 20/s). Every
 * workflow task and activity task reaches matching through that queue, so once a shard is notified of new tasks
 * more than 20 times a second, each task waits for the next read: about 25 ms per hop, three hops per dispatch. A
 * cluster of N shards reads N × 20 a second in all; the dev server, with its one shard, reads 20, and a second
 * tenant's load made every dispatch slower by that wait alone (docs/performance.md, "Fairness between tenants").
 * The dev server gets the aggregate of the cluster profile's shards at the default (8 × 20 = 160). The cluster
 * profile keeps the server's defaults: its shards spread the load as production's do.
 */
import type { StackConfig } from '../config';
import { fairnessDevServerValues } from './fairness';

/** Temporal's default `history.transferProcessorMaxPollRPS`: how often one shard reads its transfer queue. */
export const TRANSFER_POLLS_PER_SHARD_PER_S = 20;

type TuningInputs = Pick<StackConfig, 'temporalFairness' | 'temporalDynamicConfig'> & {
  cluster: Pick<StackConfig['cluster'], 'historyShards'>;
};

/** The dev server's values beyond the defaults, as key → value. */
export function devServerTuning(cfg: Pick<TuningInputs, 'cluster'>): Record<string, number> {
  return {
    'history.transferProcessorMaxPollRPS': cfg.cluster.historyShards * TRANSFER_POLLS_PER_SHARD_PER_S,
  };
}

/**
 * Every `--dynamic-config-value` the dev server starts with, as `key=value`: the version check off (it would call
 * out to the internet), the tuning above, fairness when the stack has it on (./fairness.ts), then the operator's
 * own POIMEN_STACK_TEMPORAL_DYNAMIC_CONFIG, last: the dev server keeps the last value given for a key, so the
 * operator's win (the benchmark sets the poll rate back to 20 that way to measure what the tuning changes).
 */
export function devServerDynamicConfigValues(cfg: TuningInputs): string[] {
  return [
    'frontend.enableServerVersionCheck=false',
    ...Object.entries(devServerTuning(cfg)).map(([k, v]) => `${k}=${String(v)}`),
    ...(cfg.temporalFairness ? fairnessDevServerValues() : []),
    ...cfg.temporalDynamicConfig,
  ];
}
