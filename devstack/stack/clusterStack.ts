/**
 * The cluster profile: PostgreSQL, the real Temporal server with several history shards on it, and three Kafka
 * nodes (each broker and KRaft controller, a static three-voter quorum) with replicated internal topics, RF 3
 * and min ISR 2 by default. Production's shape on one machine, for correctness under node failures and for the
 * per-dispatch costs of each part; slower than the dev profile on a small machine.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { StackConfig } from '../config';
import { StackError } from 'poimen-relay/internal/errors';
import { poll } from 'poimen-relay/internal/poll';
import { clusterPaths, clusterPorts } from './clusterPaths';
import { activeControllerFromQuorumState } from './quorumState';
import { postgresService } from './postgresService';
import { type Progress, silentProgress } from './progress';
import { type ClusterBinaries, provisionCluster } from './provisionCluster';
import { type Service, isRunning, kafkaClusterId, kafkaNodeService } from './services';
import { StackBase, type ServiceStatus } from './stack';
import { type TemporalServerService, temporalServerService } from './temporalServerService';
import { uiService } from './uiService';

export const KAFKA_NODES = ['kafka-1', 'kafka-2', 'kafka-3'] as const;
export type ClusterServiceName = 'postgres' | 'temporal' | 'ui' | (typeof KAFKA_NODES)[number];

/**
 * One id for the three nodes, drawn once and kept: a node formatted later must join the same cluster. Written
 * whole (temp file, then rename); when the file is lost, the id of a node already formatted is taken back.
 */
function sharedClusterId(file: string, nodeDirs: string[]): () => string {
  return () => {
    if (!fs.existsSync(file)) {
      const formatted = nodeDirs
        .map((d) => path.join(d, 'data', 'meta.properties'))
        .filter((f) => fs.existsSync(f))
        .map((f) => /^cluster\.id=(.+)$/m.exec(fs.readFileSync(f, 'utf8'))?.[1]?.trim())
        .find((id) => id);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(`${file}.tmp`, formatted ?? kafkaClusterId());
      fs.renameSync(`${file}.tmp`, file);
    }
    return fs.readFileSync(file, 'utf8').trim();
  };
}

export class ClusterStack extends StackBase {
  readonly services: Record<ClusterServiceName, Service>;
  protected readonly order = ['postgres', ...KAFKA_NODES, 'temporal', 'ui'] as const;
  private readonly temporal: TemporalServerService;

  constructor(cfg: StackConfig, progress: Progress = silentProgress) {
    super({ ...cfg, startTimeoutMs: cfg.cluster.startTimeoutMs }, progress);
    const p = clusterPaths(cfg);
    const ports = clusterPorts(cfg);
    const voters = ports.brokers.map((b) => `${b.id}@127.0.0.1:${b.controllerPort}`).join(',');
    const clusterId = sharedClusterId(
      path.join(p.root, 'kafka-cluster-id'),
      ports.brokers.map((b) => p.kafkaDir(b.id)),
    );
    const nodes = ports.brokers.map((b) =>
      kafkaNodeService(cfg, {
        name: `kafka-${b.id}`,
        id: b.id,
        port: b.port,
        controllerPort: b.controllerPort,
        voters,
        dir: p.kafkaDir(b.id),
        logsDir: p.logsDir,
        runDir: p.runDir,
        replication: 3,
        clusterId,
        properties: [
          'num.partitions=4',
          'default.replication.factor=3',
          'min.insync.replicas=2',
          'unclean.leader.election.enable=false',
          // Kafka's production default, stated: every fresh group (a DLQ command, a probe) waits this long for
          // more members before its first assignment.
          'group.initial.rebalance.delay.ms=3000',
        ],
        marker: p.kafkaDir(b.id),
      }),
    );
    this.temporal = temporalServerService(this.cfg);
    this.services = {
      postgres: postgresService(cfg),
      'kafka-1': nodes[0] as Service,
      'kafka-2': nodes[1] as Service,
      'kafka-3': nodes[2] as Service,
      temporal: this.temporal,
      ui: uiService(cfg),
    };
  }

  get stateDir(): string {
    return clusterPaths(this.cfg).root;
  }

  provision(): Promise<ClusterBinaries> {
    return provisionCluster(this.cfg, this.progress);
  }

  async up(): Promise<ServiceStatus[]> {
    await this.provision();
    await this.startServices(['postgres', ...KAFKA_NODES]);
    await this.startService('temporal');
    await this.startService('ui');
    return this.status();
  }

  /** Every Kafka node at once: stopped one by one, the last two lose their quorum and hang in shutdown. */
  override async down(): Promise<void> {
    for (const name of ['ui', 'temporal'] as const) {
      if (!(await this.stopService(name))) this.progress(`${name}: not running`);
    }
    const stopped = await Promise.all(KAFKA_NODES.map((n) => this.stopService(n)));
    KAFKA_NODES.forEach((n, i) => stopped[i] || this.progress(`${n}: not running`));
    if (!(await this.stopService('postgres'))) this.progress('postgres: not running');
  }

  /**
   * SIGTERM is PostgreSQL's "smart" shutdown, which waits for every client to leave (Temporal never does);
   * SIGINT is the fast one: open transactions roll back, the data stays consistent.
   */
  protected override stopSignal(name: string): NodeJS.Signals {
    return name === 'postgres' ? 'SIGINT' : 'SIGTERM';
  }

  /**
   * The service name of the KRaft quorum's active controller. kafkajs has no DescribeQuorum, and under KRaft a
   * broker's metadata answer names a random broker as "controller"; each voter records the leader it knows, with
   * the election's epoch, in its `__cluster_metadata-0/quorum-state` file: the newest epoch among the running
   * nodes names it.
   */
  async activeController(): Promise<(typeof KAFKA_NODES)[number]> {
    const p = clusterPaths(this.cfg);
    const read = () => {
      const running = KAFKA_NODES.map((name, i) => ({ name, dir: p.kafkaDir(i + 1) })).filter((n) =>
        isRunning(this.service(n.name)),
      );
      const name = `kafka-${activeControllerFromQuorumState(running.map((n) => n.dir))}`;
      return running.some((n) => n.name === name) ? (name as (typeof KAFKA_NODES)[number]) : undefined;
    };
    // Right after an election the files may not name a running leader yet.
    const polled = await poll(read, { timeoutMs: this.cfg.startTimeoutMs, intervalMs: 500 });
    if (!polled.done)
      throw new StackError(`no active KRaft controller found within ${this.cfg.startTimeoutMs} ms`);
    return polled.value;
  }

  protected override async afterReady(name: string): Promise<void> {
    if (name === 'temporal') await this.temporal.afterReady(this.progress);
  }
}
