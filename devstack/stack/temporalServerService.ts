/**
 * The cluster profile's Temporal: the real server (frontend, history, matching and worker services in one
 * process, as separate services talking over gRPC and ringpop membership) on PostgreSQL, with a fixed number of
 * history shards. Unlike the dev server it creates neither its schema nor the relay's namespace: the schema is
 * set up by temporal-sql-tool before the first start, the namespace and search attributes after it is ready.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { stringify } from 'yaml';
import { type StackConfig, childEnv } from '../config';
import { SEARCH_ATTRIBUTE_NAMES } from 'poimen-relay/internal/contract/index';
import { StackError } from 'poimen-relay/internal/errors';
import { waitUntil } from 'poimen-relay/internal/poll';
import { ensureSearchAttributes } from 'poimen-relay/internal/temporal/searchAttributes';
import { clusterPaths, clusterPorts } from './clusterPaths';
import { FAIRNESS_DYNAMIC_CONFIG } from './fairness';
import { startDaemon } from './processes';
import type { Progress } from './progress';
import { ensureDir } from './provision';
import { clusterBinaryPaths, requirePostgres } from './provisionCluster';
import { type Service, temporalAnswers } from './services';

const GRPC_NOT_FOUND = 5;
const GRPC_ALREADY_EXISTS = 6;

const DATABASES = [
  { name: 'temporal', schema: 'temporal' },
  { name: 'temporal_visibility', schema: 'visibility' },
] as const;

/** Namespace retention: long enough for a 24 h retry budget and a day of `dispatch status` after it. */
const RETENTION_S = 3 * 24 * 3600;

function serverConfig(cfg: StackConfig, dynamicConfigFile: string) {
  const ports = clusterPorts(cfg);
  const store = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `127.0.0.1:${ports.postgres}`,
      connectProtocol: 'tcp',
      user: 'postgres',
      password: '',
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const service = (grpcPort: number, membershipOffset: number, extra: object = {}) => ({
    rpc: {
      grpcPort,
      membershipPort: ports.temporal.membership(membershipOffset),
      bindOnLocalHost: true,
      ...extra,
    },
  });
  return {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: cfg.cluster.historyShards,
      datastores: {
        'postgres-default': store('temporal', 20),
        'postgres-visibility': store('temporal_visibility', 10),
      },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' },
      metrics: {
        prometheus: {
          framework: 'tally',
          timerType: 'histogram',
          listenAddress: `127.0.0.1:${ports.temporal.metrics}`,
        },
      },
    },
    services: {
      frontend: service(ports.temporal.frontend, 0, { httpPort: ports.temporal.frontendHttp }),
      history: service(ports.temporal.history, 1),
      matching: service(ports.temporal.matching, 2),
      worker: service(ports.temporal.worker, 3),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: `127.0.0.1:${ports.temporal.frontend}`,
        },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: dynamicConfigFile, pollInterval: '10s' },
  };
}

/**
 * Dynamic config: the version check off (it would call out to the internet) and task queue fairness on, as the
 * operations guide tells a production cluster to run (./fairness.ts). Otherwise the server's own defaults, not the
 * dev server's tuning: the benchmark's per-dispatch costs on this profile are production's.
 */
function dynamicConfig(cfg: StackConfig) {
  return {
    'frontend.enableServerVersionCheck': [{ value: false }],
    ...(cfg.temporalFairness
      ? Object.fromEntries(Object.entries(FAIRNESS_DYNAMIC_CONFIG).map(([k, v]) => [k, [{ value: v }]]))
      : {}),
  };
}

function psql(cfg: StackConfig, db: string, sql: string): string {
  const bin = requirePostgres();
  // -X: no ~/.psqlrc; the database named, so a table check looks where the table would be.
  const res = spawnSync(
    path.join(bin, 'psql'),
    [
      '-X',
      '-h',
      '127.0.0.1',
      '-p',
      String(cfg.cluster.postgresPort),
      '-U',
      'postgres',
      '-d',
      db,
      '-tAc',
      sql,
    ],
    { encoding: 'utf8', env: childEnv({ PGPASSWORD: '', PGOPTIONS: '' }) },
  );
  if (res.error || res.status !== 0) {
    const why = res.error?.message ?? (res.stderr ?? '').trim().split('\n').pop();
    throw new StackError(`postgres: psql on ${db} failed: ${why}`);
  }
  return res.stdout.trim();
}

/** Creates both databases and brings their schema to the server version's; each step is idempotent. */
function setupSchema(cfg: StackConfig, logFile: string, progress: Progress): void {
  const { sqlTool, schemaDir } = clusterBinaryPaths(cfg);
  const tool = (db: string, args: string[]) => {
    const res = spawnSync(
      sqlTool,
      [
        '--plugin',
        'postgres12',
        '--ep',
        '127.0.0.1',
        '-p',
        String(cfg.cluster.postgresPort),
        '-u',
        'postgres',
        '--db',
        db,
        ...args,
      ],
      { encoding: 'utf8' },
    );
    fs.appendFileSync(logFile, `${res.stdout ?? ''}${res.stderr ?? ''}`);
    if (res.status !== 0)
      throw new StackError(`temporal-sql-tool ${args[0]} on ${db} failed (see ${logFile})`);
  };
  for (const db of DATABASES) {
    if (psql(cfg, 'postgres', `SELECT 1 FROM pg_database WHERE datname = '${db.name}'`) !== '1') {
      progress(`temporal: creating database ${db.name}`);
      tool(db.name, ['create-database']);
    }
    const versioned = psql(
      cfg,
      db.name,
      `SELECT 1 FROM pg_tables WHERE schemaname = 'public' AND tablename = 'schema_version'`,
    );
    if (versioned !== '1') tool(db.name, ['setup-schema', '-v', '0.0']);
    tool(db.name, ['update-schema', '-d', path.join(schemaDir, db.schema, 'versioned')]);
  }
}

export interface TemporalServerService extends Service {
  /** After the server answers: the relay's namespace and search attributes, which the real server leaves to us. */
  afterReady(progress: Progress): Promise<void>;
}

export function temporalServerService(cfg: StackConfig): TemporalServerService {
  const p = clusterPaths(cfg);
  const ports = clusterPorts(cfg);
  const address = `127.0.0.1:${ports.temporal.frontend}`;
  const pidFile = path.join(p.runDir, 'temporal.pid');
  const logFile = path.join(p.logsDir, 'temporal.log');
  const configDir = path.join(p.temporalDir, 'config');

  const t = ports.temporal;
  return {
    name: 'temporal',
    address,
    otherPorts: [
      t.history,
      t.matching,
      t.worker,
      t.frontendHttp,
      t.metrics,
      ...[0, 1, 2, 3].map((offset) => t.membership(offset)),
    ],
    pidFile,
    logFile,
    detail: () =>
      `gRPC ${address}, ${cfg.cluster.historyShards} history shards on PostgreSQL, metrics http://127.0.0.1:${ports.temporal.metrics}/metrics, namespace ${cfg.namespace}`,
    async start() {
      ensureDir(configDir);
      ensureDir(p.logsDir);
      ensureDir(p.runDir);
      setupSchema(cfg, logFile, () => undefined);
      const dynamicConfigFile = path.join(configDir, 'dynamicconfig.yaml');
      fs.writeFileSync(dynamicConfigFile, stringify(dynamicConfig(cfg)));
      fs.writeFileSync(path.join(configDir, 'cluster.yaml'), stringify(serverConfig(cfg, dynamicConfigFile)));
      await startDaemon({
        cmd: clusterBinaryPaths(cfg).temporalServer,
        // --root is the state folder: it is the pid file's marker on the command line.
        args: ['--root', p.temporalDir, '--config', 'config', '--env', 'cluster', '--allow-no-auth', 'start'],
        cwd: p.temporalDir,
        logFile,
        pidFile,
        marker: p.temporalDir,
      });
    },
    // The system namespace: the relay's is registered after this (afterReady).
    isReady: () => temporalAnswers(address, 'temporal-system'),
    async afterReady(progress) {
      const connection = await Connection.connect({ address });
      try {
        const ns = cfg.namespace;
        // Only NOT_FOUND means missing: right after a restart other errors are the server still waking up.
        const exists = await connection.workflowService.describeNamespace({ namespace: ns }).then(
          () => true,
          (err: { code?: number }) => {
            if (err.code === GRPC_NOT_FOUND) return false;
            throw err;
          },
        );
        if (!exists) {
          await connection.workflowService
            .registerNamespace({
              namespace: ns,
              workflowExecutionRetentionPeriod: msToTs(RETENTION_S * 1000),
            })
            .catch((err: { code?: number }) => {
              // Registered by a concurrent `stack up` meanwhile: as good.
              if (err.code !== GRPC_ALREADY_EXISTS) throw err;
            });
          progress(`temporal: registered namespace ${ns} (retention ${RETENTION_S / 3600} h)`);
        }
        // The frontend serves a namespace from a cache refreshed every few seconds; a start before that fails.
        const served = await waitUntil(
          () =>
            connection.workflowService
              .countWorkflowExecutions({ namespace: ns })
              .then(() => true)
              .catch(() => false),
          cfg.startTimeoutMs,
          250,
        );
        if (!served)
          throw new StackError(`temporal: namespace ${ns} was not served within ${cfg.startTimeoutMs} ms`);
        const added = await ensureSearchAttributes(connection, ns);
        if (added.length > 0) progress(`temporal: registered search attributes ${added.join(', ')}`);
        // On SQL visibility a custom attribute is an alias in the namespace record, served once the frontend's
        // registry has refreshed: until then a start naming it is refused. A query naming one proves it is in.
        const query = `${SEARCH_ATTRIBUTE_NAMES[0]} = "poimen-stack-probe"`;
        const usable = await waitUntil(
          () =>
            connection.workflowService
              .countWorkflowExecutions({ namespace: ns, query })
              .then(() => true)
              .catch(() => false),
          cfg.startTimeoutMs,
          250,
        );
        if (!usable)
          throw new StackError(
            `temporal: search attributes on ${ns} not usable within ${cfg.startTimeoutMs} ms`,
          );
      } finally {
        await connection.close();
      }
    },
  };
}
