/* eslint-disable max-lines -- the bench's phase order and its one printed table in one place */
/**
 * `npm run bench [-- --quick] [-- --phases a,b] [-- --profile dev|cluster]`: the relay against the bare-Temporal ceiling and a plain
 * Kafka→HTTP consumer, side by side, and what a runs-API outage costs, in one run on one machine, same Kafka,
 * same Temporal, same minimal runs API. Prints one table and writes tools/results/<date>[-quick][-<phases>].json.
 * Figures are measured, never assumed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { Kafka, logLevel } from 'kafkajs';
import { loadRelayConfig } from 'poimen-relay/internal/config/index';
import { type StackConfig, loadStackConfig } from '#devstack/config';
import { freePort } from '#devstack/ports';
import { consoleProgress } from '#devstack/stack/progress';
import { PACKAGE_ROOT } from 'poimen-relay/internal/version';
import { clusterPaths } from '#devstack/stack/clusterPaths';
import {
  STACK_PROFILES,
  type StackProfile,
  openStack,
  stackEndpoints,
  stackServerPids,
} from '#devstack/stack/profiles';
import { postgresBinDir } from '#devstack/stack/provisionCluster';
import { stackPaths } from '#devstack/stack/services';
import { LocalStack } from '#devstack/stack/stack';
import { devServerDynamicConfigValues } from '#devstack/stack/devServerTuning';
import { codecDecodeBench, codecTable } from './codecs';
import { round } from './measure';
import { FAIRNESS_ROUNDS, type FairnessServers } from './fairnessPhase';
import { outage } from './outage';
import { readPgCounters } from './pgCost';
import { costRow } from './temporalCost';
import type { BenchTarget } from './phases';
import { BENCH_RELAY_SETTINGS } from './rig';
import { type Phase, PHASES, type Report, RELAY_WORKERS, SIZES, type SideTargets, runSuite } from './suite';
import { ConfigError } from 'poimen-relay/internal/errors';
import { exitFailed, intAtLeast } from '../cli';

/** The outage phase's probe interval: the product default, set explicitly so the result records it. */
const OUTAGE_PROBE_INTERVAL_MS = 2_000;

function parsePhases(list: string | undefined): Set<Phase> {
  if (list === undefined) return new Set(PHASES);
  const names = list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((x) => !(PHASES as readonly string[]).includes(x));
  if (unknown.length > 0 || names.length === 0) {
    throw new ConfigError(
      '--phases',
      `= '${list}': unknown phase '${unknown.join(',')}' (known: ${PHASES.join(', ')})`,
    );
  }
  const set = new Set(names as Phase[]);
  if (set.has('latency') && !set.has('relay')) {
    throw new ConfigError(
      '--phases',
      `= '${list}': latency needs relay (its offered load is half the relay rate)`,
    );
  }
  return set;
}

const profileOption = (v: string): StackProfile => {
  if ((STACK_PROFILES as readonly string[]).includes(v)) return v as StackProfile;
  throw new InvalidArgumentError(`must be one of ${STACK_PROFILES.join(', ')}`);
};

/** What the result says the Temporal and Kafka of the profile were. */
function stackSettings(cfg: StackConfig, profile: StackProfile) {
  if (profile === 'dev') {
    return {
      temporal: `dev server (CLI ${cfg.temporalCliVersion}, server 1.29.1), SQLite WAL synchronous=OFF unless noted`,
      kafka: `${cfg.kafkaVersion} KRaft single node`,
    };
  }
  const pg = path.basename(path.dirname(postgresBinDir() ?? 'unknown/bin'));
  return {
    temporal: `Temporal server ${cfg.cluster.temporalServerVersion}, all services in one process, ${cfg.cluster.historyShards} history shards, persistence and SQL visibility on PostgreSQL ${pg}`,
    kafka: `${cfg.kafkaVersion} KRaft, 3 combined broker/controller nodes, RF 3, min.insync.replicas 2`,
  };
}

const fairnessRoundsOption = (v: string): string[] => {
  const names = v
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  const known = [...FAIRNESS_ROUNDS, 'sweep'];
  const unknown = names.filter((x) => !known.includes(x));
  if (unknown.length > 0 || names.length === 0) {
    throw new InvalidArgumentError(`unknown round '${unknown.join(',')}' (known: ${known.join(', ')})`);
  }
  return names;
};

const positive = intAtLeast(1);

async function main(): Promise<void> {
  const opts = new Command('bench')
    .option('--quick', 'the ≤ 3-minute subset')
    .option('--codecs', 'only the decode cost of each Kafka codec (seconds; no stack)')
    .option('--phases <list>', `comma-separated subset of: ${PHASES.join(', ')} (default: all)`)
    .option('--n <n>', 'dispatches per ceiling, relay and baseline run (default 3000; quick 600)', positive)
    .option('--rounds <r>', 'ceiling/relay rounds (default 2; quick 1)', positive)
    .option('--outage-n <n>', 'dispatches in the outage phase (default 2000; quick 300)', positive)
    .option('--outage-s <s>', 'length of the outage in seconds (default 60; quick 15)', positive)
    .option('--profile <name>', 'the stack profile to measure: dev or cluster', profileOption, 'dev')
    .option(
      '--fairness-rounds <list>',
      `the fairness phase's rounds to run, of: ${[...FAIRNESS_ROUNDS, 'sweep'].join(', ')} (default: all)`,
      fairnessRoundsOption,
    )
    .option(
      '--lone-repeats <n>',
      'runs of each lone fairness round, interleaved (default 3; quick 1)',
      positive,
    )
    .parse(process.argv)
    .opts<{
      quick?: boolean;
      codecs?: boolean;
      phases?: string;
      n?: number;
      rounds?: number;
      outageN?: number;
      outageS?: number;
      profile: StackProfile;
      fairnessRounds?: string[];
      loneRepeats?: number;
    }>();
  if (opts.codecs) {
    process.stdout.write(`\nKafka codec decode cost\n${codecTable(await codecDecodeBench())}`);
    return;
  }
  const phases = parsePhases(opts.phases);
  const mode = opts.quick ? 'quick' : 'full';
  // A slower stack (the cluster on a small, shared machine) may need fewer dispatches to fit a session.
  const size = {
    ...SIZES[mode],
    n: opts.n ?? SIZES[mode].n,
    rounds: opts.rounds ?? SIZES[mode].rounds,
    fairness: {
      ...SIZES[mode].fairness,
      ...(opts.fairnessRounds ? { rounds: opts.fairnessRounds } : {}),
      ...(opts.loneRepeats ? { loneRepeats: opts.loneRepeats } : {}),
    },
  };
  const resized = size.n !== SIZES[mode].n || size.rounds !== SIZES[mode].rounds;
  const progress = consoleProgress('bench');
  const cfg = loadStackConfig();
  const profile = opts.profile;
  await openStack(cfg, profile, progress).up();
  const endpoints = stackEndpoints(cfg, profile);
  const kafka = new Kafka({
    clientId: 'poimen-bench',
    brokers: endpoints.kafka.brokers,
    logLevel: logLevel.ERROR,
  });
  const target: BenchTarget = {
    kafkaBrokers: endpoints.kafka.bootstrap,
    temporalAddress: endpoints.temporal.address,
    namespace: endpoints.temporal.namespace,
    logsDir: profile === 'cluster' ? clusterPaths(cfg).logsDir : stackPaths(cfg).logsDir,
    kafka,
    serverPids: () => stackServerPids(cfg, profile),
    topicReplicas: endpoints.kafka.brokers.length >= 3 ? 3 : 1,
    metricsUrl: endpoints.temporal.metricsUrl,
    ...(profile === 'cluster'
      ? { pgCounters: () => readPgCounters(postgresBinDir()!, cfg.cluster.postgresPort) }
      : {}),
  };

  // Dev profile: a second, throwaway Temporal dev server without a database file, for the persistence comparison
  // and for the backlog phase, which leaves executions behind; only started when such a phase runs. The cluster
  // has no in-memory counterpart (its persistence is PostgreSQL), so there the backlog phase runs on the cluster
  // itself (it starts only what the ingester gets through in its window) and the comparison is skipped.
  const memCfg = {
    ...cfg,
    stateDir: fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-bench-mem-')),
    temporalPort: await freePort(),
    temporalUiPort: await freePort(),
    temporalMetricsPort: await freePort(),
    temporalInMemory: true,
  };
  const memStack = new LocalStack(memCfg, progress);
  const needsMemory = profile === 'dev' && (phases.has('memory') || phases.has('scaling'));
  if (needsMemory) await memStack.startService('temporal');
  const memory: BenchTarget | undefined = needsMemory
    ? {
        ...target,
        temporalAddress: memStack.services.temporal.address,
        serverPids: () => ({
          ...stackServerPids(cfg, 'dev'),
          temporal: stackServerPids(memCfg, 'dev').temporal,
        }),
      }
    : undefined;
  // The fairness phase: a throwaway in-memory dev server per round, one with task queue fairness and one without,
  // so each round starts from an empty queue and its 20,000-record flood is left nowhere.
  let fairStack: LocalStack | undefined;
  const fairness: FairnessServers = {
    describe: `in-memory dev server (CLI ${cfg.temporalCliVersion}, server 1.29.1, one history shard, ${devServerDynamicConfigValues({ ...memCfg, temporalFairness: false }).join(' ')}), fresh for each round`,
    async start(on, dynamicConfig = []) {
      const fairCfg = {
        ...memCfg,
        temporalDynamicConfig: [...memCfg.temporalDynamicConfig, ...dynamicConfig],
        stateDir: fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-bench-fair-')),
        temporalPort: await freePort(),
        temporalUiPort: await freePort(),
        temporalMetricsPort: await freePort(),
        temporalFairness: on,
      };
      const stack = new LocalStack(fairCfg, progress);
      fairStack = stack;
      await stack.startService('temporal');
      return {
        target: {
          ...target,
          temporalAddress: stack.services.temporal.address,
          serverPids: () => ({
            ...stackServerPids(cfg, 'dev'),
            temporal: stackServerPids(fairCfg, 'dev').temporal,
          }),
        },
        async stop() {
          await stack.stopService('temporal');
          fairStack = undefined;
          fs.rmSync(fairCfg.stateDir, { recursive: true, force: true });
        },
      };
    },
  };
  // On the cluster, the fairness rounds that need no fresh server (fairness on, admission on: nothing left queued)
  // run on the cluster's own Temporal, one after the other.
  const clusterFairness: FairnessServers = {
    describe: `the cluster's own Temporal (server ${cfg.cluster.temporalServerVersion}, fairness on), shared by every round`,
    shared: true,
    start: () => Promise.resolve({ target, stop: () => Promise.resolve() }),
  };
  const side: SideTargets =
    profile === 'dev'
      ? { memory, persistence: memory, fairness }
      : {
          memory: target,
          persistenceSkipped: 'dev-only phase (in-memory dev server vs SQLite)',
          fairness: clusterFairness,
        };
  // An interrupted benchmark must not leave its throwaway servers running.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(
      signal,
      () =>
        void Promise.allSettled([
          memStack.stopService('temporal'),
          fairStack?.stopService('temporal'),
        ]).finally(() => process.exit(130)),
    );
  }

  const started = Date.now();
  try {
    const report: Report = await runSuite(phases, size, target, side, progress);
    const { fields, rows, atLogEnd } = report;

    const outageN = opts.outageN ?? size.outageN;
    const outageS = opts.outageS ?? size.outageS;
    let outageSettings: Record<string, unknown> | undefined;
    if (phases.has('outage')) {
      progress(`outage: ${outageN} dispatches, the runs API answers 503 for ${outageS} s in the middle`);
      const { settings, ...figures } = await outage(target, {
        n: outageN,
        outageS,
        workers: RELAY_WORKERS,
        partitions: 4,
        probeIntervalMs: OUTAGE_PROBE_INTERVAL_MS,
      });
      outageSettings = settings;
      Object.assign(fields, figures);
      const relayPerS = fields.relay_per_s;
      if (typeof relayPerS === 'number') {
        fields.outage_drain_rate_over_relay = round(figures.outage_drain_per_s / relayPerS, 3);
      }
      rows.push(
        [
          `outage: API calls during ${figures.outage_actual_s} s down`,
          String(figures.outage_api_calls_during),
        ],
        [
          'outage: dead letters',
          `${figures.outage_dead_letters} (runs ${figures.outage_runs_created}/${outageN})`,
        ],
        [
          'outage: drain after recovery',
          `${figures.outage_drain_s} s for ${figures.outage_runs_after_recovery} runs (90 % by ${figures.outage_drain_90_s} s), first run after ${figures.outage_detect_s} s`,
        ],
        [
          'outage: drain rate ÷ healthy rate',
          `${figures.outage_drain_rate_over_healthy} (${figures.outage_drain_per_s}/s ÷ ${figures.outage_healthy_per_s}/s before the outage)`,
        ],
      );
      if (figures.outage_healthy_executing_per_s !== null) {
        rows.push([
          'outage: … ÷ healthy rate, all started',
          `${figures.outage_drain_rate_over_healthy_executing} (÷ ${figures.outage_healthy_executing_per_s}/s once the ingester had started all, ${figures.outage_ingested_before_outage_s} s before the outage)`,
        ]);
      }
      const r = figures.outage_retry_cost;
      rows.push(
        ['outage: cost of a dispatch', costRow(figures.outage_dispatch_cost)],
        [
          'outage: per retried attempt',
          `${r.events_per_retried_attempt} events, ${r.actions_per_retried_attempt} actions (${r.retried_attempts} attempts in ${r.retried} of ${r.happy + r.retried} histories)`,
        ],
      );
      if (fields.outage_drain_rate_over_relay !== undefined) {
        rows.push(['outage: … ÷ relay drain rate', String(fields.outage_drain_rate_over_relay)]);
      }
    }

    let codecDecode: Awaited<ReturnType<typeof codecDecodeBench>> | undefined;
    if (phases.has('codecs')) {
      progress('codecs: decode cost of each Kafka compression codec');
      codecDecode = await codecDecodeBench();
    }

    const relayCfg = loadRelayConfig('ingester', BENCH_RELAY_SETTINGS);
    const all = phases.size === PHASES.length;
    const result = {
      date: new Date().toISOString(),
      mode,
      profile,
      ...(all ? {} : { phases: [...phases] }),
      duration_s: round((Date.now() - started) / 1000),
      ...fields,
      ...(atLogEnd.length > 0 ? { committed_at_log_end: atLogEnd.every(Boolean) } : {}),
      ...(codecDecode ? { codec_decode: codecDecode } : {}),
      machine: {
        cores: os.cpus().length,
        cpu: os.cpus()[0]?.model,
        memory_gib: round(os.totalmem() / 2 ** 30),
        node: process.version,
      },
      settings: {
        ...(phases.has('relay') || phases.has('baseline') ? { n: size.n } : {}),
        ...(phases.has('relay') ? { rounds: size.rounds } : {}),
        partitions: 4,
        ingest: relayCfg.ingest,
        worker: relayCfg.worker,
        retry: relayCfg.retry,
        ...(outageSettings ? { outage: outageSettings } : {}),
        ...stackSettings(cfg, profile),
        topic_replication_factor: target.topicReplicas,
      },
    };
    if (atLogEnd.length > 0) {
      rows.push([
        'committed offsets at the log end',
        `${result.committed_at_log_end} (${atLogEnd.filter(Boolean).length} of ${atLogEnd.length} drains)`,
      ]);
    }
    process.stdout.write(
      `\npoimen-relay benchmark (${mode}, ${profile} profile${all ? '' : `, ${[...phases].join(', ')}`}, ${result.machine.cores} cores, ${result.duration_s} s)\n`,
    );
    for (const [k, v] of rows) process.stdout.write(`  ${k.padEnd(44)} ${v}\n`);
    if (codecDecode) process.stdout.write(`\nKafka codec decode cost\n${codecTable(codecDecode)}`);
    const dir = path.join(PACKAGE_ROOT, 'tools', 'results');
    fs.mkdirSync(dir, { recursive: true });
    const suffix = `${mode === 'quick' ? '-quick' : ''}${resized ? `-n${size.n}x${size.rounds}` : ''}${all ? '' : `-${[...phases].join('-')}`}`;
    // The issue names a cluster run's file cluster-<date>.json; the dev profile's names stay as they were.
    const prefix = profile === 'dev' ? '' : `${profile}-`;
    const file = path.join(dir, `${prefix}${result.date.slice(0, 10)}${suffix}.json`);
    fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(`\nwritten to ${path.relative(process.cwd(), file)}\n`);
    if (result.committed_at_log_end === false) {
      process.stderr.write('bench: FAILED: a relay drain ended with the group short of the log end\n');
      process.exitCode = 1;
    }
    if (
      phases.has('outage') &&
      (fields.outage_dead_letters !== 0 || fields.outage_runs_created !== outageN)
    ) {
      process.stderr.write(
        `bench: FAILED: the outage phase dead-lettered ${String(fields.outage_dead_letters)} and created ${String(fields.outage_runs_created)} of ${outageN} runs\n`,
      );
      process.exitCode = 1;
    }
  } finally {
    if (needsMemory) await memStack.stopService('temporal');
    fs.rmSync(memCfg.stateDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => exitFailed('bench', err));
