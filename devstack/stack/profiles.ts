/**
 * The two shapes of the local stack. `dev`: one Kafka broker and the temporal dev server (SQLite, one history
 * shard), quick to start, what the demo and `npm test` run on. `cluster`: PostgreSQL, the real Temporal server
 * with 8 history shards and three Kafka brokers, production's topology for `npm run test:cluster`, the chaos
 * soak and the benchmark's per-dispatch costs. Each has its own ports and state, so both can run at once.
 */
import type { StackConfig } from '../config';
import { ClusterStack } from './clusterStack';
import { clusterPaths, clusterPorts } from './clusterPaths';
import { livePid } from './processes';
import { type Progress, silentProgress } from './progress';
import { stackPaths } from './services';
import { LocalStack, type StackBase, type ServiceStatus } from './stack';
import path from 'node:path';

export const STACK_PROFILES = ['dev', 'cluster'] as const;
export type StackProfile = (typeof STACK_PROFILES)[number];

export interface StackEndpoints {
  profile: StackProfile;
  /** `bootstrap` is what KAFKA_BROKERS takes: the brokers, comma-separated. */
  kafka: { bootstrap: string; brokers: string[] };
  temporal: { address: string; namespace: string; metricsUrl: string; uiUrl?: string };
  postgres?: { address: string };
}

export type Stack = StackBase & { up(): Promise<ServiceStatus[]> };

export function openStack(
  cfg: StackConfig,
  profile: StackProfile,
  progress: Progress = silentProgress,
): Stack {
  return profile === 'cluster' ? new ClusterStack(cfg, progress) : new LocalStack(cfg, progress);
}

export function stackEndpoints(cfg: StackConfig, profile: StackProfile): StackEndpoints {
  if (profile === 'dev') {
    const broker = `127.0.0.1:${cfg.kafkaPort}`;
    return {
      profile,
      kafka: { bootstrap: broker, brokers: [broker] },
      temporal: {
        address: `127.0.0.1:${cfg.temporalPort}`,
        namespace: cfg.namespace,
        metricsUrl: `http://127.0.0.1:${cfg.temporalMetricsPort}/metrics`,
        uiUrl: `http://127.0.0.1:${cfg.temporalUiPort}`,
      },
    };
  }
  const ports = clusterPorts(cfg);
  const brokers = ports.brokers.map((b) => `127.0.0.1:${b.port}`);
  return {
    profile,
    kafka: { bootstrap: brokers.join(','), brokers },
    temporal: {
      address: `127.0.0.1:${ports.temporal.frontend}`,
      namespace: cfg.namespace,
      metricsUrl: `http://127.0.0.1:${ports.temporal.metrics}/metrics`,
      uiUrl: `http://127.0.0.1:${ports.temporal.ui}`,
    },
    postgres: { address: `127.0.0.1:${ports.postgres}` },
  };
}

/** Root pids of the stack's server processes by role (PostgreSQL: the postmaster; its backends are its children). */
export function stackServerPids(
  cfg: StackConfig,
  profile: StackProfile,
): { temporal: number[]; postgres: number[]; kafka: number[] } {
  const live = (runDir: string, names: string[]) =>
    names
      .map((n) => livePid(path.join(runDir, `${n}.pid`)))
      .filter((pid): pid is number => pid !== undefined);
  if (profile === 'dev') {
    const run = stackPaths(cfg).runDir;
    return { temporal: live(run, ['temporal']), postgres: [], kafka: live(run, ['kafka']) };
  }
  const run = clusterPaths(cfg).runDir;
  return {
    temporal: live(run, ['temporal']),
    postgres: live(run, ['postgres']),
    kafka: live(run, ['kafka-1', 'kafka-2', 'kafka-3']),
  };
}
