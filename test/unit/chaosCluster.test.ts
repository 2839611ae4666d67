/**
 * The chaos soak on the cluster profile: it finds the active KRaft controller from the nodes' quorum
 * state (Kafka's client API names a random broker under KRaft), declares replicated topics that keep acked
 * records through one broker kill, and fails a cluster soak that never killed PostgreSQL.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { activeControllerFromQuorumState } from '../../tools/chaos/servers';
import { soakVerdict } from '../../tools/chaos/sizes';
import type { Producer } from 'kafkajs';
import { type Planned, publish, soakTopicSpecs } from '../../tools/chaos/traffic';
import type { SoakResult } from '../../tools/chaos/types';

describe('the active controller, from the quorum state', () => {
  let root: string;
  const node = (id: number, state?: object) => {
    const dir = path.join(root, `kafka-${id}`);
    const meta = path.join(dir, 'data', '__cluster_metadata-0');
    fs.mkdirSync(meta, { recursive: true });
    if (state) fs.writeFileSync(path.join(meta, 'quorum-state'), JSON.stringify(state));
    return dir;
  };
  beforeEach(() => (root = fs.mkdtempSync(path.join(os.tmpdir(), 'chaos-quorum-'))));
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  test('is the leader of the newest epoch: a node back from a kill may still name the old one', () => {
    const dirs = [
      node(1, { leaderId: 2, leaderEpoch: 4, votedId: -1 }),
      node(2, { leaderId: 3, leaderEpoch: 5, votedId: 3 }),
      node(3, { leaderId: 3, leaderEpoch: 5, votedId: -1 }),
    ];
    expect(activeControllerFromQuorumState(dirs)).toBe(3);
  });

  test('is unknown while no node knows a leader (mid-election, or a node without its state yet)', () => {
    const dirs = [
      node(1, { leaderId: -1, leaderEpoch: 6, votedId: 1 }),
      node(2),
      node(3, { leaderEpoch: 6 }),
    ];
    expect(activeControllerFromQuorumState(dirs)).toBeUndefined();
  });
});

describe('the soak’s topics', () => {
  test('on the cluster: three replicas and min.insync.replicas=2 on each of the tenant’s topics', () => {
    const specs = soakTopicSpecs('t1', 4, true);
    expect(specs.map((s) => s.topic)).toEqual([
      'poimen.t1.dispatch',
      'poimen.t1.events',
      'poimen.t1.dispatch.dlq',
    ]);
    for (const s of specs) {
      expect(s).toMatchObject({ numPartitions: 4, replicationFactor: 3 });
      expect(s.configEntries?.filter((e) => e.name === 'min.insync.replicas')).toEqual([
        { name: 'min.insync.replicas', value: '2' },
      ]);
    }
    // The DLQ keeps its own settings beside it.
    expect(specs[2]!.configEntries!.map((e) => e.name)).toEqual(
      expect.arrayContaining(['retention.ms', 'max.message.bytes']),
    );
  });

  test("on the dev stack: the replication left to the topics' policy (the broker's default on one broker), no ISR setting", () => {
    for (const s of soakTopicSpecs('t1', 4, false)) {
      expect(s).toMatchObject({ numPartitions: 4 });
      expect(s.replicationFactor).toBeUndefined();
      expect(s.configEntries?.some((e) => e.name === 'min.insync.replicas') ?? false).toBe(false);
    }
  });
});

describe('the cluster publisher', () => {
  test('sends each record on its own and repeats only the sends that failed', async () => {
    // kafkajs can resolve a multi-partition send without sending the part whose leader moved (kafkajs #1303):
    // with one record per send, a send either failed (and is repeated) or wrote its record.
    const sends: string[][] = [];
    let failB = true;
    const producer = {
      send: async ({ messages }: { messages: { key: string | null }[] }) => {
        const keys = messages.map((m) => m.key ?? '');
        sends.push(keys);
        if (keys.includes('b') && failB) {
          failB = false;
          throw new Error('leader went away');
        }
        return [];
      },
    } as unknown as Producer;
    const rec = (key: string): Planned => ({ key, value: Buffer.from('{}'), kind: 'valid' });
    await publish(producer, 't1', [rec('a'), rec('b'), rec('c')], {
      publishSeconds: 0.001,
      onePerSend: true,
    });
    expect(sends.every((s) => s.length === 1)).toBe(true);
    expect(sends.flat().sort()).toEqual(['a', 'b', 'b', 'c']);
  });
});

describe('the verdict of a cluster soak', () => {
  const passing = (over: Partial<SoakResult>): SoakResult =>
    ({
      profile: 'dev',
      drained: true,
      lost: 0,
      duplicate_runs: 0,
      duplicate_executions: 0,
      malformed: 2,
      dlq_malformed_matched: 2,
      dlq_without_reason: 0,
      dlq_unexpected: 0,
      dedup: { dedup_409: 0, bound: 0, unexplained: 0 },
      dlq_account: { dlq_repeats_unexplained: 0 },
      committed_at_log_end: true,
      executions_running: 0,
      consumer_group_lag: 0,
      kills: { ingester: 1, worker: 1, kafka: 1, temporal: 1, total: 4 },
      dlq_sources_with_two_ids: 0,
      not_ready: [],
      ...over,
    }) as SoakResult;

  test('fails when PostgreSQL was never killed on the cluster; the dev stack has none to kill', () => {
    expect(soakVerdict(passing({}))).toEqual([]);
    const cluster = passing({
      profile: 'cluster',
      ingesters: 2,
      group_members: 2,
      kills: { ingester: 1, worker: 1, kafka: 1, temporal: 1, postgres: 0, total: 4 },
    });
    expect(soakVerdict(cluster)).toEqual(['no postgres was killed']);
    expect(soakVerdict({ ...cluster, kills: { ...cluster.kills, postgres: 1, total: 5 } })).toEqual([]);
  });

  test('fails when a running ingester is not in the consumer group after the drain', () => {
    const cluster = passing({
      profile: 'cluster',
      ingesters: 2,
      group_members: 1,
      kills: { ingester: 1, worker: 1, kafka: 1, temporal: 1, postgres: 1, total: 5 },
    });
    expect(soakVerdict(cluster)).toEqual(['1 of 2 ingesters in the consumer group after the drain']);
  });
});
