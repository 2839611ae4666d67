/**
 * The soak's server faults: kill -9 and restart of the Kafka broker(s), the Temporal server and, on the cluster
 * profile, PostgreSQL. The dev stack has one of each; on the cluster a Kafka kill takes one node of three (the
 * leader of a dispatch partition, or now and then the active KRaft controller) and the next server fault waits
 * until that node is back in every dispatch partition's ISR, so at most one broker is ever missing from a quorum
 * of three.
 */
import { ConfigResourceTypes, type Kafka } from 'kafkajs';
import { poll } from 'poimen-relay/internal/poll';
import type { ClusterFaults, SoakOptions } from './types';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export type ServerVictim = 'kafka' | 'temporal' | 'postgres';

const START_ATTEMPTS = 5;
/** How long a restarted broker may take to catch up before the soak goes on without it (and says so). */
const ISR_CATCH_UP_MS = 120_000;

export { activeControllerFromQuorumState } from '#devstack/stack/quorumState';

export interface ServerFaults {
  readonly victims: readonly ServerVictim[];
  /** Kills one server of this kind, keeps it down for `downMs`, restarts it and waits until it is back. */
  hit(victim: ServerVictim, downMs: number): Promise<void>;
  /** The cluster's account of its server faults; undefined on the dev stack. */
  summary(): ClusterFaults | undefined;
  /** Kills the Temporal server and leaves it down; the answer starts it again (and waits until it is ready). */
  temporalDown(): Promise<() => Promise<void>>;
  /**
   * Makes writes to `dlqTopic` fail until the answer is called: on the dev stack by killing the one broker; on the
   * cluster by killing a broker that leads one of its partitions with the topic's min.insync.replicas raised to
   * 3, so its remaining replicas refuse acks=all writes while the dispatch topics go on.
   */
  refuseDlq(dlqTopic: string): Promise<() => Promise<void>>;
}

/**
 * Sets a topic's min.insync.replicas, keeping its other settings (AlterConfigs replaces a topic's whole set);
 * the answer puts the old value back. Retried while a broker restarts.
 */
async function raiseMinIsr(kafka: Kafka, topic: string, value: string): Promise<() => Promise<void>> {
  const set = async (entries: { name: string; value: string }[]) => {
    const done = await poll(
      async () => {
        const a = kafka.admin();
        try {
          await a.connect();
          await a.alterConfigs({
            validateOnly: false,
            resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: entries }],
          });
          return true;
        } finally {
          await a.disconnect().catch(() => undefined);
        }
      },
      { timeoutMs: 60_000, intervalMs: 1000, retryErrors: true },
    );
    if (!done.done) throw new Error(`could not set the configuration of ${topic}`);
  };
  const a = kafka.admin();
  let own: { name: string; value: string }[];
  try {
    await a.connect();
    const { resources } = await a.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }],
    });
    own = (resources[0]?.configEntries ?? [])
      .filter((e) => !e.isDefault && e.configSource === TOPIC_CONFIG_SOURCE)
      .map((e) => ({ name: e.configName, value: e.configValue }));
  } finally {
    await a.disconnect().catch(() => undefined);
  }
  await set([...own.filter((e) => e.name !== 'min.insync.replicas'), { name: 'min.insync.replicas', value }]);
  return () => set(own);
}

/** DescribeConfigs' source of a setting made on the topic itself (DYNAMIC_TOPIC_CONFIG). */
const TOPIC_CONFIG_SOURCE = 1;

export function serverFaults(
  opts: SoakOptions,
  kafka: Kafka,
  dispatchTopic: string,
  rnd: () => number,
): ServerFaults {
  const say = opts.progress ?? (() => undefined);
  if ('services' in opts) {
    const { services } = opts;
    return {
      victims: ['kafka', 'temporal'],
      async hit(victim, downMs) {
        if (victim === 'postgres') throw new Error('the dev stack has no PostgreSQL');
        say(`kill -9 ${victim}`);
        await services.kill(victim);
        await sleep(downMs);
        await services.start(victim);
      },
      summary: () => undefined,
      async temporalDown() {
        say('kill -9 temporal (stays down)');
        await services.kill('temporal');
        return () => services.start('temporal');
      },
      async refuseDlq() {
        say('kill -9 kafka (the DLQ topic refuses writes)');
        await services.kill('kafka');
        return () => services.start('kafka');
      },
    };
  }

  const { cluster } = opts;
  const targets = { partition_leader: 0, controller: 0 };
  let startRetries = 0;
  // A server whose killed predecessor has not quite gone can exit at once (PostgreSQL refuses to start while the
  // old postmaster's pid still exists, or its shared memory is still attached): a few more tries, then give up.
  const startBack = async (name: Parameters<typeof cluster.start>[0]) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await cluster.start(name);
      } catch (err) {
        if (attempt >= START_ATTEMPTS) throw err;
        startRetries++;
        say(
          `${name}: start attempt ${attempt} failed (${err instanceof Error ? err.message : String(err)}); again`,
        );
        await sleep(2000 * attempt);
      }
    }
  };
  const restarts: Record<ServerVictim, number[]> = { kafka: [], temporal: [], postgres: [] };

  const leaders = async (): Promise<{ leader: number; isr: number[] }[]> => {
    const a = kafka.admin();
    try {
      await a.connect();
      const { topics } = await a.fetchTopicMetadata({ topics: [dispatchTopic] });
      return (topics[0]?.partitions ?? []).map((p) => ({ leader: p.leader, isr: p.isr }));
    } finally {
      await a.disconnect().catch(() => undefined);
    }
  };

  // Kafka kills alternate, from the first: the active controller (in a combined quorum of three it also leads
  // dispatch partitions), then a dispatch partition's leader that is not the controller.
  let kafkaKills = 0;
  const pickBroker = async (): Promise<{ node: number; roles: (keyof typeof targets)[] }> => {
    const got = await poll(leaders, { timeoutMs: 30_000, intervalMs: 500, retryErrors: true });
    const led = [...new Set(got.done ? got.value.map((p) => p.leader).filter((n) => n >= 0) : [])];
    if (led.length === 0) throw new Error(`no leader known for ${dispatchTopic}`);
    const controller = await cluster.activeController();
    const others = led.filter((n) => n !== controller);
    const pool = others.length > 0 ? others : led;
    const node =
      kafkaKills++ % 2 === 0 && controller !== undefined
        ? controller
        : pool[Math.floor(rnd() * pool.length)]!;
    const roles: (keyof typeof targets)[] = [];
    if (led.includes(node)) roles.push('partition_leader');
    if (node === controller) roles.push('controller');
    return { node, roles };
  };

  // Back in the ISR of every dispatch partition: only then can the next broker go without a partition dropping
  // below min.insync.replicas.
  const caughtUp = async (node: number): Promise<boolean> => {
    const got = await poll(
      async () => {
        const parts = await leaders();
        return parts.length > 0 && parts.every((p) => p.isr.includes(node));
      },
      { timeoutMs: ISR_CATCH_UP_MS, intervalMs: 500, retryErrors: true },
    );
    return got.done;
  };

  return {
    victims: ['kafka', 'temporal', 'postgres'],
    async hit(victim, downMs) {
      const started = Date.now();
      if (victim === 'kafka') {
        const { node, roles } = await pickBroker();
        const name = `kafka-${node}` as const;
        if (name !== 'kafka-1' && name !== 'kafka-2' && name !== 'kafka-3')
          throw new Error(`no node ${node}`);
        const as = roles.map((r) =>
          r === 'controller' ? 'the active controller' : 'a dispatch partition leader',
        );
        say(`kill -9 ${name} (${as.join(', ') || 'no role'})`);
        await cluster.kill(name);
        await sleep(downMs);
        await startBack(name);
        if (!(await caughtUp(node))) say(`${name} not back in every ISR after ${ISR_CATCH_UP_MS / 1000} s`);
        for (const r of roles) targets[r]++;
      } else {
        say(`kill -9 ${victim}`);
        await cluster.kill(victim);
        await sleep(downMs);
        await startBack(victim);
      }
      restarts[victim].push((Date.now() - started) / 1000);
    },
    async temporalDown() {
      say('kill -9 temporal (stays down)');
      await cluster.kill('temporal');
      return async () => void (await startBack('temporal'));
    },
    async refuseDlq(dlqTopic) {
      const restore = await raiseMinIsr(kafka, dlqTopic, '3');
      const got = await poll(
        async () => {
          const a = kafka.admin();
          try {
            await a.connect();
            const { topics } = await a.fetchTopicMetadata({ topics: [dlqTopic] });
            const led = (topics[0]?.partitions ?? []).map((p) => p.leader).filter((n) => n >= 0);
            return led.length > 0 ? led : undefined;
          } finally {
            await a.disconnect().catch(() => undefined);
          }
        },
        { timeoutMs: 30_000, intervalMs: 500, retryErrors: true },
      );
      const led = got.done ? got.value : [];
      const node = led[Math.floor(rnd() * led.length)];
      const name = `kafka-${node}`;
      if (name !== 'kafka-1' && name !== 'kafka-2' && name !== 'kafka-3') {
        await restore();
        throw new Error(`no leader known for ${dlqTopic}`);
      }
      say(`kill -9 ${name} (leads a partition of ${dlqTopic}; min.insync.replicas 3 there)`);
      await cluster.kill(name);
      return async () => {
        await startBack(name);
        if (!(await caughtUp(node!))) say(`${name} not back in every ISR after ${ISR_CATCH_UP_MS / 1000} s`);
        await restore();
      };
    },
    summary() {
      const stats = (xs: number[]) => ({
        count: xs.length,
        mean: xs.length ? Math.round((xs.reduce((s, x) => s + x, 0) / xs.length) * 10) / 10 : 0,
        max: xs.length ? Math.round(Math.max(...xs) * 10) / 10 : 0,
      });
      return {
        kafka_targets: { ...targets },
        start_retries: startRetries,
        restart_s: {
          kafka: stats(restarts.kafka),
          temporal: stats(restarts.temporal),
          postgres: stats(restarts.postgres),
        },
      };
    },
  };
}
