/**
 * The chaos soak: dispatches with duplicates and malformed records are published while a
 * controller SIGKILLs and restarts the ingesters, the workers, the Kafka broker and the Temporal server (on the
 * cluster profile: one of three brokers at a time, the Temporal server and its PostgreSQL), and the
 * runs API answers a share of 503s and drops sockets. Afterwards it checks the promise the relay
 * sells — nothing lost, nothing doubled — against the wire (the API double's requests), Kafka (DLQ records,
 * group lag) and Temporal (executions), never against the relay's own account of itself.
 *
 * `npm run chaos` (tools/chaos/main.ts) runs the full soak; test/it_chaos.test.ts runs the quick one.
 *
 * This file only wires one soak together, in order: traffic.ts plans and publishes the records, faults.ts is
 * the controller that kills and restarts, verdict.ts waits for the drain and draws up the account.
 */
import crypto from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { childEnv } from '#devstack/config';
import type { RelayProcess } from '#devstack/relayProcess';
import { RunsApiDouble } from '#devstack/runsApiDouble';
import { ensureTopics } from 'poimen-relay/internal/kafka/topics';
import { ANSWER_TO_COMPLETION_MS, relayFleet, runFaults, scriptApiFaults } from './faults';
import { planTraffic, prng, publish, soakTopicSpecs } from './traffic';
import type { SoakOptions, SoakResult, SoakRun } from './types';
import type { BudgetLane } from './combined';
import { laneAccount, laneDrained, notReady } from './lane';
import { account, awaitDrain, groupMembersOf } from './verdict';
import { attemptTimeoutsOf } from './attemptTimeouts';

export type { ClusterControl, ServiceControl, SoakOptions, SoakResult, Victim } from './types';

async function stopWithin(p: RelayProcess, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), ms)));
  if ((await Promise.race([p.stop(), late])) === 'late') await p.kill();
  clearTimeout(timer);
}

export async function runSoak(opts: SoakOptions): Promise<SoakResult> {
  const say = opts.progress ?? (() => undefined);
  const seed = opts.seed ?? crypto.randomInt(2 ** 31);
  const rnd = prng(seed);
  const run = crypto.randomBytes(4).toString('hex');
  const tenant = `chaos${run}`;
  const taskQueue = `chaos-${run}`;
  const groupId = `chaos-${run}`;
  const partitions = opts.partitions ?? 4;
  const profile = 'cluster' in opts ? 'cluster' : 'dev';
  const workers = opts.workers ?? 2;
  const kafka = new Kafka({
    clientId: 'poimen-chaos',
    brokers: opts.kafkaBrokers.split(','),
    logLevel: logLevel.NOTHING,
  });

  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, soakTopicSpecs(tenant, partitions, profile === 'cluster'));
  // The budget lane: a tenant of its own whose ingester gives its (always refused) dispatches a short budget.
  const lane: BudgetLane | undefined = opts.combined
    ? { tenant: `${tenant}b`, groupId: `${groupId}-budget`, run, budgetMs: opts.combined.budgetMs, keys: [] }
    : undefined;
  if (lane) await ensureTopics(admin, soakTopicSpecs(lane.tenant, partitions, profile === 'cluster'));
  await admin.disconnect();

  const unavailable = opts.apiUnavailableShare ?? 0.2;
  const drop = opts.apiDropShare ?? 0.03;
  const api = await RunsApiDouble.start({ record: true });
  // The API's own randomness is separate from the schedule's, so the schedule replays from the seed.
  const apiRnd = prng(seed ^ 0x5eed);
  const droppedAfterAdmit = scriptApiFaults(api, apiRnd, unavailable, drop);

  const env = childEnv({
    KAFKA_BROKERS: opts.kafkaBrokers,
    TEMPORAL_ADDRESS: opts.temporalAddress,
    TEMPORAL_NAMESPACE: opts.namespace,
    TEMPORAL_TASK_QUEUE: taskQueue,
    KAFKA_GROUP_ID: groupId,
    DISPATCH_TOPIC_PATTERN: `^poimen\\.${tenant}\\.dispatch$`,
    RUNS_API_URL: api.url,
    LOG_LEVEL: 'warn',
    ...opts.env,
  });
  const laneEnv = lane && {
    ...env,
    KAFKA_GROUP_ID: lane.groupId,
    DISPATCH_TOPIC_PATTERN: `^poimen\\.${lane.tenant}\\.dispatch$`,
    RETRY_MAX_DURATION_MS: String(lane.budgetMs),
  };
  const fleet = relayFleet(opts, run, env, laneEnv);
  const { ingesterNames, relay, startRelay } = fleet;
  const soak: SoakRun = { kafka, tenant, run, groupId, taskQueue };

  const expected = planTraffic(tenant, run, opts, rnd);
  const { records, uniqueValid, bad } = expected;

  const faultStart = Date.now();
  // On the cluster the publisher is not idempotent: leaders move with every broker kill, and kafkajs 2.2.4's
  // idempotent producer then either stops for good (OUT_OF_ORDER_SEQUENCE_NUMBER) or, having rolled a sequence
  // number back, gets a record acked as a duplicate without writing it (src/kafka/dlqPublisher.ts) — a loss the
  // verdict would blame on the relay. Without it a lost answer only writes its own batch twice.
  const producer: Producer = kafka.producer({
    idempotent: profile === 'dev',
    maxInFlightRequests: 1,
    retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 3000 },
  });
  let connection: Connection | undefined;
  try {
    say(
      `tenant ${tenant}, ${records.length} records (${uniqueValid.length} unique valid, ${bad.length} malformed), seed ${seed}`,
    );
    for (const name of fleet.workerNames) await startRelay(name);
    for (const name of ingesterNames) await startRelay(name);
    if (fleet.laneIngester) await startRelay(fleet.laneIngester);
    await producer.connect();

    const publisher = publish(producer, tenant, records, {
      publishSeconds: opts.publishSeconds,
      onePerSend: profile === 'cluster',
    });
    const faults = await runFaults(opts, soak, env, rnd, publisher, fleet, faultStart, lane && { api, lane });
    const publishS = await publisher;
    say(`faults over after ${faults.kills.total} kills; waiting for the drain`);

    connection = await Connection.connect({ address: opts.temporalAddress });
    const client = new Client({ connection, namespace: opts.namespace });
    const drain = await awaitDrain(soak, client, api, expected, opts.drainTimeoutMs, async () =>
      lane ? laneDrained(soak, lane) : true,
    );
    const { drained, drainedAtMs } = drain;
    const { lastFaultEndMs, gap, down } = faults;
    const verdict = await account(
      soak,
      client,
      api,
      expected,
      droppedAfterAdmit,
      faults,
      drain,
      attemptTimeoutsOf(opts.logsDir, soak.run),
    );
    const groupMembers = await groupMembersOf(soak, ingesterNames.length);
    const laneAcc = lane && (await laneAccount(soak, lane, api));
    const late = await notReady(relay);

    return {
      profile,
      ingesters: ingesterNames.length,
      workers,
      ...verdict,
      dlq_sources_with_two_ids: verdict.dlq_sources_with_two_ids + (laneAcc?.sourcesWithTwoIds ?? 0),
      not_ready: late,
      group_members: groupMembers,
      ...(faults.cluster ? { cluster_faults: faults.cluster } : {}),
      ...(faults.combined ? { combined_faults: faults.combined } : {}),
      ...(laneAcc ? { budget_lane: laneAcc.account } : {}),
      publish_s: Math.round(publishS * 10) / 10,
      fault_window_s: Math.round((lastFaultEndMs - faultStart) / 100) / 10,
      drain_after_last_fault_s: Math.round((drainedAtMs - lastFaultEndMs) / 100) / 10,
      drained,
      seed,
      settings: {
        partitions,
        ...(profile === 'cluster' ? { replication_factor: 3, min_insync_replicas: 2 } : {}),
        workers,
        ingesters: ingesterNames.length,
        answer_to_completion_ms: ANSWER_TO_COMPLETION_MS,
        api_unavailable_share: unavailable,
        api_drop_share: drop,
        fault_gap_ms: gap,
        down_ms: down,
        publish_seconds: opts.publishSeconds,
        relay_env: opts.env ?? {},
        ...(lane ? { budget_lane_retry_max_duration_ms: lane.budgetMs } : {}),
      },
    };
  } finally {
    await connection?.close().catch(() => undefined);
    await producer.disconnect().catch(() => undefined);
    // A relay drains on SIGTERM until its in-flight starts are done, which never happens while Temporal is away:
    // after a soak that failed that way, kill what is left rather than hang.
    await Promise.all(Object.values(relay).map((p) => p && stopWithin(p, 60_000)));
    await api.close();
  }
}
