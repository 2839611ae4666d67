/**
 * `npm run bench [-- --quick]`: the relay against the bare-Temporal ceiling and a plain Kafka→HTTP consumer,
 * side by side, in one run on one machine, same Kafka, same Temporal, same minimal runs API. Prints one table
 * and writes tools/results/<date>[-quick].json. Figures are measured, never assumed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { Kafka, logLevel } from 'kafkajs';
import { loadRelayConfig, loadStackConfig } from '../../src/config';
import { freePort } from '../../src/devstack/ports';
import { consoleProgress } from '../../src/devstack/stack/progress';
import { PACKAGE_ROOT } from '../../src/version';
import { LocalStack } from '../../src/devstack/stack/stack';
import { codecDecodeBench, codecTable } from './codecs';
import { round } from './measure';
import { type BenchTarget, baseline, ceiling, ingesterMemory, latency, relayDrain } from './phases';

/** The ceiling's start concurrency: 16 beat 64 in every run here (starts compete with execution on the server). */
const CEILING_CONCURRENCY = 16;

const SIZES = {
  quick: { n: 600, rounds: 1, latencyS: 15, memBacklog: 20_000, memWindowS: 20, scaleN: 300 },
  full: {
    n: 3000,
    rounds: 2,
    latencyS: 60,
    memBacklog: 100_000,
    memWindowS: 60,
    scaleN: 1000,
  },
};

async function main(): Promise<void> {
  const opts = new Command('bench')
    .option('--quick', 'the ≤ 3-minute subset')
    .option('--codecs', 'only the decode cost of each Kafka codec (seconds; no stack)')
    .parse(process.argv)
    .opts<{ quick?: boolean; codecs?: boolean }>();
  if (opts.codecs) {
    process.stdout.write(`\nKafka codec decode cost\n${codecTable(await codecDecodeBench())}`);
    return;
  }
  const mode = opts.quick ? 'quick' : 'full';
  const size = SIZES[mode];
  const progress = consoleProgress('bench');
  const cfg = loadStackConfig();
  const stack = new LocalStack(cfg, progress);
  await stack.up();
  const logsDir = path.join(cfg.stateDir, 'logs');
  const kafka = new Kafka({
    clientId: 'poimen-bench',
    brokers: [stack.services.kafka.address],
    logLevel: logLevel.ERROR,
  });
  const sqlite: BenchTarget = {
    kafkaBrokers: stack.services.kafka.address,
    temporalAddress: stack.services.temporal.address,
    namespace: cfg.namespace,
    logsDir,
    kafka,
  };

  // A second, throwaway Temporal dev server without a database file, for the persistence comparison and for
  // phases that leave executions behind.
  const memPort = await freePort();
  const memCfg = {
    ...cfg,
    stateDir: fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-bench-mem-')),
    temporalPort: memPort,
    temporalUiPort: await freePort(),
    temporalMetricsPort: await freePort(),
    temporalInMemory: true,
  };
  const memStack = new LocalStack(memCfg, progress);
  await memStack.startService('temporal');
  const memory: BenchTarget = { ...sqlite, temporalAddress: memStack.services.temporal.address };
  // An interrupted benchmark must not leave its throwaway server running.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void memStack.stopService('temporal').finally(() => process.exit(130)));
  }

  const started = Date.now();
  try {
    // Ceiling and relay alternate: the SQLite database grows with every phase and the machine's load drifts,
    // so measuring one after the other would hand the earlier phase an advantage. Each figure is the mean of
    // its rounds; the runs are kept in the result.
    const ceilings = [];
    const relays = [];
    for (let r = 1; r <= size.rounds; r++) {
      progress(
        `ceiling ${r}/${size.rounds}: ${size.n} dispatch workflows started directly (concurrency ${CEILING_CONCURRENCY})`,
      );
      ceilings.push(await ceiling(sqlite, size.n, CEILING_CONCURRENCY, 1));
      progress(`relay ${r}/${size.rounds}: draining ${size.n} pre-loaded records (1 ingester, 1 worker)`);
      relays.push(await relayDrain(sqlite, size.n, { workers: 1, partitions: 4 }));
    }
    const mean = (xs: number[]) => round(xs.reduce((a, b) => a + b, 0) / xs.length);
    const ceilingPerS = mean(ceilings.map((c) => c.per_s));
    const relay = {
      per_s: mean(relays.map((x) => x.per_s)),
      amplification: Math.max(...relays.map((x) => x.amplification)),
      worker_rss_mib: Math.max(...relays.map((x) => x.worker_rss_mib)),
      ingester_rss_mib: Math.max(...relays.map((x) => x.ingester_rss_mib ?? 0)),
    };
    progress(`baseline: plain kafkajs → undici consumer, ${size.n} records`);
    const base = await baseline(sqlite, size.n, 4);
    const rate = Math.max(1, Math.round(relay.per_s / 2));
    progress(`latency: ${rate}/s offered for ${size.latencyS} s`);
    const lat = await latency(sqlite, rate, size.latencyS, 1);
    progress(
      `memory: ingester with a ${size.memBacklog}-record backlog (${size.memWindowS} s window, in-memory Temporal)`,
    );
    const mem = await ingesterMemory(memory, size.memBacklog, size.memWindowS);
    const scaling: Record<string, number> = {};
    // Every relay drain must end with the group committed to the log end (issue 10 item 6).
    const atLogEnd = relays.map((x) => x.committed_at_log_end);
    for (const w of [1, 2, 4]) {
      progress(`scaling: ${w} worker(s), ${size.scaleN} records`);
      const drain = await relayDrain(sqlite, size.scaleN, { workers: w, partitions: 4 });
      scaling[`workers_${w}_per_s`] = drain.per_s;
      atLogEnd.push(drain.committed_at_log_end);
    }
    progress(`persistence: in-memory Temporal, ${size.scaleN} records`);
    const memDrain = await relayDrain(memory, size.scaleN, { workers: 1, partitions: 4 });
    scaling.memory_persistence_per_s = memDrain.per_s;
    atLogEnd.push(memDrain.committed_at_log_end);
    scaling.sqlite_wal_persistence_per_s = scaling.workers_1_per_s!;

    progress('codecs: decode cost of each Kafka compression codec');
    const codecDecode = await codecDecodeBench();

    const relayCfg = loadRelayConfig('ingester', {});
    const result = {
      date: new Date().toISOString(),
      mode,
      duration_s: round((Date.now() - started) / 1000),
      ceiling_per_s: ceilingPerS,
      relay_per_s: relay.per_s,
      baseline_per_s: base.per_s,
      relay_over_ceiling: round(relay.per_s / ceilingPerS, 3),
      relay_over_baseline: round(relay.per_s / base.per_s, 3),
      latency_offered_per_s: lat.offered_per_s,
      latency_p50_ms: lat.p50_ms,
      latency_p95_ms: lat.p95_ms,
      latency_p99_ms: lat.p99_ms,
      amplification: relay.amplification,
      committed_at_log_end: atLogEnd.every(Boolean),
      ingester_rss_mib: mem.ingester_rss_mib,
      worker_rss_mib: Math.max(relay.worker_rss_mib, mem.worker_rss_mib ?? 0),
      ingester_rss_during_drain_mib: relay.ingester_rss_mib,
      baseline_rss_mib: base.rss_mib,
      memory_backlog: mem,
      ceiling_runs: ceilings,
      relay_runs: relays,
      scaling,
      codec_decode: codecDecode,
      machine: {
        cores: os.cpus().length,
        cpu: os.cpus()[0]?.model,
        memory_gib: round(os.totalmem() / 2 ** 30),
        node: process.version,
      },
      settings: {
        n: size.n,
        partitions: 4,
        ingest: relayCfg.ingest,
        worker: relayCfg.worker,
        temporal: 'dev server (CLI v1.5.1, server 1.29.1), SQLite WAL synchronous=OFF unless noted',
        kafka: `${cfg.kafkaVersion} KRaft single node`,
      },
    };
    const rows: [string, string][] = [
      [
        'ceiling (bare Temporal)',
        `${result.ceiling_per_s}/s (mean of ${size.rounds}: ${ceilings.map((c) => c.per_s).join(', ')})`,
      ],
      [
        'relay (Kafka → ingester → Temporal → API)',
        `${result.relay_per_s}/s = ${result.relay_over_ceiling} × ceiling (runs: ${relays.map((x) => x.per_s).join(', ')})`,
      ],
      [
        'baseline (kafkajs → undici, no Temporal)',
        `${result.baseline_per_s}/s; relay = ${result.relay_over_baseline} × baseline`,
      ],
      [
        `latency at ${lat.offered_per_s}/s`,
        `p50 ${lat.p50_ms} ms, p95 ${lat.p95_ms} ms, p99 ${lat.p99_ms} ms`,
      ],
      ['amplification (POSTs per dispatch)', String(result.amplification)],
      [
        'committed offsets at the log end',
        `${result.committed_at_log_end} (${atLogEnd.filter(Boolean).length} of ${atLogEnd.length} drains)`,
      ],
      [`ingester peak RSS (${size.memBacklog} backlog)`, `${result.ingester_rss_mib} MiB`],
      ['worker peak RSS', `${result.worker_rss_mib} MiB`],
      [
        'scaling 1 / 2 / 4 workers',
        `${scaling.workers_1_per_s} / ${scaling.workers_2_per_s} / ${scaling.workers_4_per_s} /s`,
      ],
      [
        'Temporal in memory vs SQLite WAL',
        `${scaling.memory_persistence_per_s} vs ${scaling.sqlite_wal_persistence_per_s} /s`,
      ],
    ];
    process.stdout.write(
      `\npoimen-relay benchmark (${mode}, ${result.machine.cores} cores, ${result.duration_s} s)\n`,
    );
    for (const [k, v] of rows) process.stdout.write(`  ${k.padEnd(44)} ${v}\n`);
    process.stdout.write(`\nKafka codec decode cost\n${codecTable(codecDecode)}`);
    const dir = path.join(PACKAGE_ROOT, 'tools', 'results');
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `${result.date.slice(0, 10)}${mode === 'quick' ? '-quick' : ''}.json`);
    fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(`\nwritten to ${path.relative(process.cwd(), file)}\n`);
    if (!result.committed_at_log_end) {
      process.stderr.write('bench: FAILED: a relay drain ended with the group short of the log end\n');
      process.exitCode = 1;
    }
  } finally {
    await memStack.stopService('temporal');
    fs.rmSync(memCfg.stateDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
