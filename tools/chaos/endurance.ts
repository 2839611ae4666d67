/**
 * The endurance run (`npm run chaos -- --endurance [--records N]`): N records through two ingesters and two
 * workers in a stable group (no kills, no API faults, the shipped retry and breaker defaults), with the heap and
 * RSS of every relay process sampled from its /metrics; the answer gives each process's post-GC heap slope per
 * 100,000 records (heapSlope.ts) and its RSS. Publishing stays a bounded number of records ahead of the runs, so
 * the heap measures a steady flow, not a backlog.
 */
import crypto from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { childEnv } from '#devstack/config';
import { topics } from 'poimen-relay/internal/contract/index';
import { metricValue } from '#devstack/relayProcess';
import { ensureTopics } from 'poimen-relay/internal/kafka/topics';
import { RunsApiDouble } from '#devstack/runsApiDouble';
import { committedAtLogEnd } from '../bench/groupOffsets';
import { relayFleet } from './faults';
import { type MemSample, heapSlope, postGcPoints } from './heapSlope';
import { soakTopicSpecs } from './traffic';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MIB = 2 ** 20;
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

export interface EnduranceOptions {
  kafkaBrokers: string;
  temporalAddress: string;
  namespace: string;
  logsDir: string;
  cluster: boolean;
  records: number;
  ingesters?: number;
  workers?: number;
  /** Windows the samples are split into for the post-GC heap (default 20). */
  windows?: number;
  sampleMs?: number;
  /** Records published ahead of the runs at most. */
  ahead?: number;
  /** The run gives up when no run is created for this long. */
  stallMs?: number;
  progress?: (m: string) => void;
}

export interface ProcessMemory {
  name: string;
  samples: number;
  major_gcs: number;
  post_gc_windows: number;
  post_gc_heap_mib: { first: number; last: number };
  heap_slope_mib_per_100k_records: number;
  heap_slope_stderr: number | null;
  rss_mib: { first: number; last: number; max: number };
}

export interface EnduranceResult {
  records: number;
  runs: number;
  lost: number;
  committed_at_log_end: boolean;
  records_per_s: number;
  processes: ProcessMemory[];
  settings: Record<string, unknown>;
}

export async function runEndurance(opts: EnduranceOptions): Promise<EnduranceResult> {
  const say = opts.progress ?? (() => undefined);
  const run = crypto.randomBytes(4).toString('hex');
  const tenant = `endure${run}`;
  const groupId = `endure-${run}`;
  const windows = opts.windows ?? 20;
  const sampleMs = opts.sampleMs ?? 2000;
  const ahead = opts.ahead ?? 2000;
  const kafka = new Kafka({
    clientId: 'poimen-endurance',
    brokers: opts.kafkaBrokers.split(','),
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, soakTopicSpecs(tenant, 4, opts.cluster));
  await admin.disconnect();
  // record: false keeps no bodies; the request list is emptied as it goes, so a million records fit.
  const api = await RunsApiDouble.start({ record: false });
  const env = childEnv({
    KAFKA_BROKERS: opts.kafkaBrokers,
    TEMPORAL_ADDRESS: opts.temporalAddress,
    TEMPORAL_NAMESPACE: opts.namespace,
    TEMPORAL_TASK_QUEUE: `endure-${run}`,
    KAFKA_GROUP_ID: groupId,
    DISPATCH_TOPIC_PATTERN: `^poimen\\.${tenant}\\.dispatch$`,
    RUNS_API_URL: api.url,
    LOG_LEVEL: 'warn',
  });
  const fleet = relayFleet(
    { logsDir: opts.logsDir, ingesters: opts.ingesters, workers: opts.workers },
    `endure-${run}`,
    env,
  );
  const names = [...fleet.workerNames, ...fleet.ingesterNames];
  const samples = new Map<string, MemSample[]>(names.map((n) => [n, []]));
  const producer = kafka.producer({ idempotent: !opts.cluster, maxInFlightRequests: 1 });
  const t0 = Date.now();
  try {
    for (const name of names) await fleet.startRelay(name);
    await producer.connect();
    say(
      `tenant ${tenant}: ${opts.records} records, ${fleet.ingesterNames.length} ingesters, ${fleet.workerNames.length} workers`,
    );
    let published = 0;
    let lastRuns = 0;
    let lastProgressAt = Date.now();
    let lastSay = 0;
    let nextSample = 0;
    while (api.runs.size < opts.records) {
      const runs = api.runs.size;
      if (runs > lastRuns) [lastRuns, lastProgressAt] = [runs, Date.now()];
      if (Date.now() - lastProgressAt > (opts.stallMs ?? 300_000)) {
        say(`no run for ${(opts.stallMs ?? 300_000) / 1000} s: giving up at ${runs} runs`);
        break;
      }
      if (published < opts.records && published - runs < ahead) {
        const n = Math.min(200, opts.records - published);
        await producer.send({
          topic: topics.dispatch(tenant),
          acks: -1,
          messages: Array.from({ length: n }, (_, j) => {
            const i = published + j;
            const key = `endure-${run}-${i}`;
            return {
              key: `${tenant}:${key}`,
              value: JSON.stringify({
                workflow_ref: 'endure@v1',
                input: { i },
                goal_id: null,
                dispatch_key: key,
              }),
            };
          }),
        });
        published += n;
      }
      if (Date.now() >= nextSample) {
        nextSample = Date.now() + sampleMs;
        api.requests.splice(0);
        await Promise.all(names.map(async (name) => sample(fleet.relay[name], runs, samples.get(name)!)));
      }
      if (Date.now() - lastSay > 60_000) {
        lastSay = Date.now();
        say(`${runs} runs, ${Math.round(runs / ((Date.now() - t0) / 1000))}/s`);
      }
      await sleep(published - runs < ahead && published < opts.records ? 20 : 250);
    }
    const elapsedS = (Date.now() - t0) / 1000;
    const runs = api.runs.size;
    return {
      records: opts.records,
      runs,
      lost: opts.records - runs,
      committed_at_log_end: await committedAtLogEnd(kafka, groupId, [topics.dispatch(tenant)], 60_000),
      records_per_s: round(runs / elapsedS, 1),
      processes: names.map((name) => memoryOf(name, samples.get(name)!, windows)),
      settings: {
        windows,
        sample_ms: sampleMs,
        ahead,
        partitions: 4,
        relay_env: 'shipped defaults, LOG_LEVEL=warn',
      },
    };
  } finally {
    await producer.disconnect().catch(() => undefined);
    await Promise.all(Object.values(fleet.relay).map((p) => p?.stop()));
    await api.close();
  }
}

async function sample(p: { metrics(): Promise<string> } | undefined, records: number, into: MemSample[]) {
  const text = await p?.metrics().catch(() => undefined);
  if (!text) return;
  const heap = metricValue(text, 'nodejs_heap_size_used_bytes');
  const rss = metricValue(text, 'process_resident_memory_bytes');
  const majorGcs = metricValue(text, 'nodejs_gc_duration_seconds_count', { kind: 'major' }) ?? 0;
  if (heap !== undefined && rss !== undefined)
    into.push({ records, heapUsedBytes: heap, rssBytes: rss, majorGcs });
}

function memoryOf(name: string, s: MemSample[], windows: number): ProcessMemory {
  const points = postGcPoints(s, windows);
  const fit = heapSlope(points);
  const rss = s.map((x) => x.rssBytes / MIB);
  return {
    name,
    samples: s.length,
    major_gcs: s.length ? s[s.length - 1]!.majorGcs - s[0]!.majorGcs : 0,
    post_gc_windows: points.length,
    post_gc_heap_mib: {
      first: round(points[0]?.heapMiB ?? 0),
      last: round(points[points.length - 1]?.heapMiB ?? 0),
    },
    heap_slope_mib_per_100k_records: round(fit.slope, 3),
    heap_slope_stderr: fit.stderr === undefined ? null : round(fit.stderr, 3),
    rss_mib: {
      first: round(rss[0] ?? 0, 1),
      last: round(rss[rss.length - 1] ?? 0, 1),
      max: round(Math.max(0, ...rss), 1),
    },
  };
}
