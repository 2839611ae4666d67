/** Where the cluster profile keeps its state: a folder of its own inside the stack's state folder. */
import path from 'node:path';
import type { StackConfig } from '../config';

export function clusterPaths(cfg: StackConfig) {
  const root = path.join(cfg.stateDir, 'cluster');
  return {
    root,
    kafkaDir: (id: number) => path.join(root, `kafka-${id}`),
    temporalDir: path.join(root, 'temporal'),
    logsDir: path.join(root, 'logs'),
    runDir: path.join(root, 'run'),
  };
}

/** The cluster's ports, all derived from three settings (docs/contract.md). */
export function clusterPorts(cfg: StackConfig) {
  const k = cfg.cluster.kafkaBasePort;
  const t = cfg.cluster.temporalPort;
  return {
    brokers: [1, 2, 3].map((id) => ({ id, port: k + id - 1, controllerPort: k + 10 + id - 1 })),
    temporal: {
      frontend: t,
      history: t + 1,
      matching: t + 2,
      worker: t + 3,
      membership: (offset: number) => t + 100 + offset,
      frontendHttp: t + 4,
      ui: t + 1000,
      metrics: t + 1001,
    },
    postgres: cfg.cluster.postgresPort,
  };
}
