/* eslint-disable max-lines -- the two dev services side by side, each start beside its readiness probe */
/**
 * The two services of the local stack. Each knows how to start itself from the cached binaries, where its
 * data, log and pid file live (all under one state folder), and how to prove readiness through a real client.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import type { StackConfig } from '../config';
import { createLocalKafka } from '../kafka';
import { SEARCH_ATTRIBUTE_NAMES } from 'poimen-relay/internal/contract/index';
import { StackError } from 'poimen-relay/internal/errors';
import { PACKAGE_ROOT } from 'poimen-relay/internal/version';
import { devServerDynamicConfigValues } from './devServerTuning';
import { ensureDir, kafkaLibsDir, temporalBinPath } from './provision';
import { livePid, startDaemon, stopDaemon } from './processes';

const execFileAsync = promisify(execFile);

/**
 * A KRaft cluster id: 16 random bytes as base64url without padding (22 characters). Drawn again when it starts
 * with "-", as Kafka's own Uuid.randomUuid does: StorageTool would read `-t -…` as an option, not the id's value.
 */
export function kafkaClusterId(random: (n: number) => Buffer = crypto.randomBytes): string {
  for (;;) {
    const id = random(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

export type ServiceName = 'kafka' | 'temporal';

export interface Service {
  readonly name: string;
  readonly address: string;
  readonly pidFile: string;
  readonly logFile: string;
  start(): Promise<void>;
  isReady(): Promise<boolean>;
  /** Extra detail for `stack status` (e.g. the Web UI URL). */
  detail(): string;
  /** Every port it listens on besides the address's, checked free before a start (a clash is one clear line). */
  readonly otherPorts?: readonly number[];
}

export function stackPaths(cfg: StackConfig) {
  const root = cfg.stateDir;
  return {
    root,
    kafkaDir: path.join(root, 'kafka'),
    temporalDir: path.join(root, 'temporal'),
    logsDir: path.join(root, 'logs'),
    runDir: path.join(root, 'run'),
  };
}

/** A second client listener beside PLAINTEXT (the transport-security tests run one with SASL_SSL). */
export interface KafkaListenerOptions {
  /** Listener name, e.g. SECURE; its properties go under `listener.name.<lower-case name>.`. */
  name: string;
  port: number;
  protocol: 'SSL' | 'SASL_SSL' | 'SASL_PLAINTEXT';
  /** Extra server.properties lines (TLS keystore, SASL mechanisms, JAAS). */
  properties: string[];
  /** Extra `StorageTool format` arguments, e.g. `--add-scram SCRAM-SHA-256=[name=…,password=…]`. */
  formatArgs?: string[];
  /**
   * Extra JVM system properties of the broker, `-Dname=value`: what Kafka reads only from there, e.g. the URLs an
   * OAUTHBEARER validator may fetch (`org.apache.kafka.sasl.oauthbearer.allowed.urls`).
   */
  jvmOptions?: string[];
}

/** One KRaft node (combined broker and controller): the dev profile runs one, the cluster profile three. */
export interface KafkaNodeSpec {
  /** Service name: `kafka` on the dev profile, `kafka-<id>` on the cluster. */
  name: string;
  id: number;
  port: number;
  controllerPort: number;
  /** `controller.quorum.voters`: every node of the cluster, `id@host:controllerPort`. */
  voters: string;
  /** This node's folder (data, server.properties). */
  dir: string;
  logsDir: string;
  runDir: string;
  /** Replication of Kafka's internal topics (consumer offsets, transactions): the cluster's size. */
  replication: number;
  /** The cluster id every node is formatted with (one per cluster, drawn once). */
  clusterId: () => string;
  /** Lines that differ by profile (defaults of topic replication, say). */
  properties: string[];
  /** Marker of the pid file: a path that appears on the java command line. */
  marker: string;
}

/** `brokerProperties`: extra server.properties lines of the broker itself (a test's own broker defaults). */
/**
 * The dev profile's pid-file markers. Not the state folder itself: the cluster profile's command lines name
 * folders inside it (`<state>/cluster/kafka-1`), so a dev pid file whose pid had been reused by a cluster node would
 * have matched, and `stack down` signalled the other profile's process.
 */
export function devMarker(cfg: StackConfig, service: 'kafka' | 'temporal'): string {
  return `${stackPaths(cfg).root}#dev-${service}`;
}

export function kafkaService(
  cfg: StackConfig,
  extra?: KafkaListenerOptions,
  brokerProperties: string[] = [],
): Service {
  const p = stackPaths(cfg);
  return kafkaNodeService(
    cfg,
    {
      name: 'kafka',
      id: 1,
      port: cfg.kafkaPort,
      controllerPort: cfg.kafkaControllerPort,
      voters: `1@127.0.0.1:${cfg.kafkaControllerPort}`,
      dir: p.kafkaDir,
      logsDir: p.logsDir,
      runDir: p.runDir,
      replication: 1,
      clusterId: () => kafkaClusterId(),
      properties: [
        'num.partitions=1',
        'offsets.topic.num.partitions=1',
        // Likewise the transaction log, made by the first transactional producer (it_transactional_producers):
        // Kafka's default of 50 partitions is 50 more logs to load at every broker restart of the fault suites.
        'transaction.state.log.num.partitions=1',
        // A fresh group's first join is not held back: the suites make hundreds of groups. Production brokers wait
        // 3 s (Kafka's default); the cluster profile runs that.
        'group.initial.rebalance.delay.ms=0',
        // ACLs as production has them, open to everyone until an ACL names a resource: a test can revoke the
        // relay's access to one group or topic (a consumer crash kafkajs does not recover from) and give it
        // back. Not on the cluster profile: there the controllers' votes would be refused until the authorizer
        // has loaded the metadata the votes are electing a leader for.
        'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer',
        'allow.everyone.if.no.acl.found=true',
      ],
      marker: devMarker(cfg, 'kafka'),
    },
    extra,
    brokerProperties,
  );
}

export function kafkaNodeService(
  cfg: StackConfig,
  node: KafkaNodeSpec,
  extra?: KafkaListenerOptions,
  brokerProperties: string[] = [],
): Service {
  const address = `127.0.0.1:${node.port}`;
  const otherPorts = [node.controllerPort, ...(extra ? [extra.port] : [])];
  const pidFile = path.join(node.runDir, `${node.name}.pid`);
  const logFile = path.join(node.logsDir, `${node.name}.log`);
  const dataDir = path.join(node.dir, 'data');
  const propsFile = path.join(node.dir, 'server.properties');
  const extraListener = extra ? `,${extra.name}://127.0.0.1:${extra.port}` : '';
  const minIsr = Math.min(2, node.replication);

  const properties = () =>
    [
      'process.roles=broker,controller',
      `node.id=${node.id}`,
      `controller.quorum.voters=${node.voters}`,
      `listeners=PLAINTEXT://127.0.0.1:${node.port},CONTROLLER://127.0.0.1:${node.controllerPort}${extraListener}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${node.port}${extraListener}`,
      'controller.listener.names=CONTROLLER',
      'inter.broker.listener.name=PLAINTEXT',
      `listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT${extra ? `,${extra.name}:${extra.protocol}` : ''}`,
      ...(extra?.properties ?? []),
      `log.dirs=${dataDir}`,
      ...node.properties,
      `offsets.topic.replication.factor=${node.replication}`,
      `transaction.state.log.replication.factor=${node.replication}`,
      `transaction.state.log.min.isr=${minIsr}`,
      `share.coordinator.state.topic.replication.factor=${node.replication}`,
      `share.coordinator.state.topic.min.isr=${minIsr}`,
      'log.cleaner.dedupe.buffer.size=2097152',
      // Topics are declared explicitly (topics apply / admin createTopics); auto-creation would hide typos.
      'auto.create.topics.enable=false',
      // Tests create many uuid-named topics; keep segments small so the state folder stays small.
      'log.segment.bytes=16777216',
      ...brokerProperties,
      '',
    ].join('\n');

  return {
    name: node.name,
    address,
    otherPorts,
    pidFile,
    logFile,
    detail: () => `bootstrap ${address}`,
    async start() {
      ensureDir(dataDir);
      ensureDir(node.logsDir);
      ensureDir(node.runDir);
      fs.writeFileSync(propsFile, properties());
      const classpath = path.join(kafkaLibsDir(cfg), '*');
      const log4j = path.join(PACKAGE_ROOT, 'stack', 'kafka', 'log4j2.yaml');
      const java = (mainClass: string, args: string[]) => [
        '-Xms128m',
        '-Xmx512m',
        '-XX:+UseG1GC',
        `-Dlog4j2.configurationFile=${log4j}`,
        `-Dpoimen.stack=${node.marker}`,
        ...(extra?.jvmOptions ?? []),
        '-cp',
        classpath,
        mainClass,
        ...args,
      ];
      if (!fs.existsSync(path.join(dataDir, 'meta.properties'))) {
        // Asynchronous: the cluster profile formats its three nodes at once (15-20 s each on a busy machine).
        const res = await execFileAsync(
          'java',
          java('kafka.tools.StorageTool', [
            'format',
            '-t',
            node.clusterId(),
            '-c',
            propsFile,
            ...(extra?.formatArgs ?? []),
          ]),
          { encoding: 'utf8' },
        ).then(
          (r) => ({ ok: true, out: `${r.stdout}${r.stderr}` }),
          (err: { stdout?: string; stderr?: string }) => ({
            ok: false,
            out: `${err.stdout ?? ''}${err.stderr ?? ''}`,
          }),
        );
        fs.appendFileSync(logFile, res.out);
        if (!res.ok) throw new StackError(`${node.name} storage format failed (see ${logFile})`);
      }
      await startDaemon({
        cmd: 'java',
        args: java('kafka.Kafka', [propsFile]),
        cwd: node.dir,
        logFile,
        pidFile,
        marker: node.marker,
      });
    },
    async isReady() {
      const kafka = createLocalKafka('poimen-stack-probe', [address], { probe: true });
      const admin = kafka.admin();
      try {
        await admin.connect();
        const cluster = await admin.describeCluster();
        return cluster.brokers.some((b) => b.nodeId === node.id) && cluster.controller !== null;
      } catch {
        return false;
      } finally {
        await admin.disconnect().catch(() => undefined);
      }
    },
  };
}

export function temporalService(cfg: StackConfig): Service {
  const p = stackPaths(cfg);
  const address = `127.0.0.1:${cfg.temporalPort}`;
  const pidFile = path.join(p.runDir, 'temporal.pid');
  const logFile = path.join(p.logsDir, 'temporal.log');
  const dbFile = path.join(p.temporalDir, 'temporal.db');
  const uiUrl = `http://127.0.0.1:${cfg.temporalUiPort}`;

  return {
    name: 'temporal',
    address,
    pidFile,
    logFile,
    detail: () => `gRPC ${address}, Web UI ${uiUrl}, namespace ${cfg.namespace}`,
    async start() {
      ensureDir(p.temporalDir);
      ensureDir(p.logsDir);
      ensureDir(p.runDir);
      const args = [
        'server',
        'start-dev',
        '--ip',
        '127.0.0.1',
        '--port',
        String(cfg.temporalPort),
        '--ui-port',
        String(cfg.temporalUiPort),
        '--metrics-port',
        String(cfg.temporalMetricsPort),
        '--namespace',
        cfg.namespace,
        // The pid file's marker on the command line (the key is one the server does not know, so it is inert).
        '--dynamic-config-value',
        `poimen.stack=${JSON.stringify(devMarker(cfg, 'temporal'))}`,
        ...(cfg.temporalInMemory
          ? // No database file: state dies with the process.
            []
          : [
              '--db-filename',
              dbFile,
              '--sqlite-pragma',
              'journal_mode=WAL',
              '--sqlite-pragma',
              // OFF survives a killed server process (the OS still holds the writes), not a power loss: fine here.
              'synchronous=OFF',
            ]),
        ...devServerDynamicConfigValues(cfg).flatMap((kv) => ['--dynamic-config-value', kv]),
        '--log-level',
        'warn',
        ...SEARCH_ATTRIBUTE_NAMES.flatMap((name) => ['--search-attribute', `${name}=Keyword`]),
      ];
      await startDaemon({
        cmd: temporalBinPath(cfg),
        args,
        cwd: p.temporalDir,
        logFile,
        pidFile,
        marker: devMarker(cfg, 'temporal'),
      });
    },
    isReady: () => temporalAnswers(address, cfg.namespace),
  };
}

/** Temporal at `address` is ready when its frontend serves `namespace` (the relay's, or the system's). */
export async function temporalAnswers(address: string, namespace: string): Promise<boolean> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, connectTimeout: 1000 });
    await connection.workflowService.describeNamespace({ namespace });
    return true;
  } catch {
    return false;
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

export function isRunning(service: Service): boolean {
  return livePid(service.pidFile) !== undefined;
}

export { stopDaemon };
