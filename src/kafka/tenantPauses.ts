/**
 * The pause topic (contract §2, "Pausing a tenant"): `tenant pause` and `resume` write a tenant's pause to it
 * (writeTenantPause), `tenant status` reads it to its end (readTenantPauses), and every ingester follows it
 * (./tenantPauseFollower.ts): at start it reads every pause before it consumes a record, then it learns a new one
 * within about a second, as does every worker (a paused tenant's calls are held). The topic is compacted and keyed by tenant, so it holds each tenant's latest pause for
 * good, and a pause outlives every process. Owned here because only src/kafka/ speaks kafkajs; what a pause does
 * is the ingester's (ingest/admission.ts).
 */
import type { Admin, Kafka } from 'kafkajs';
import { TENANT_PAUSES_GROUP_PREFIX, TENANT_PAUSES_TOPIC } from '../contract/names';
import { type TenantPause, encodeTenantPause } from '../contract/tenantPause';
import type { Gauge } from 'prom-client';
import type { KafkaConfig } from '../config';
import { ConfigError } from '../errors';
import { type Logger, createLogger } from '../logger';
import { kafkaAccessProblem } from './errors';
import { TENANT_PAUSES_TOPIC_SPEC } from './pauseTopic';
import { TenantPauseFollower } from './tenantPauseFollower';
import { ensureTopics } from './topics';

const silentLogger = createLogger('poimen-relay', 'silent');

/** Writes the tenant's pause (declaring the topic first if it is missing), acknowledged by every in-sync replica. */
export async function writeTenantPause(kafka: Kafka, admin: Admin, pause: TenantPause): Promise<void> {
  await ensureTopics(admin, [TENANT_PAUSES_TOPIC_SPEC]);
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
  });
  await producer.connect();
  try {
    await producer.send({
      topic: TENANT_PAUSES_TOPIC,
      acks: -1,
      messages: [{ key: pause.tenant, value: encodeTenantPause(pause) }],
    });
  } finally {
    await producer.disconnect();
  }
}

/**
 * Every tenant's latest pause, read to the topic's end as it is now (through a throwaway group under
 * `${TENANT_PAUSES_GROUP_PREFIX}read-`, deleted after); none when the topic does not exist yet. Rejects at the first
 * failure: a command reports it.
 */
export async function readTenantPauses(kafka: Kafka): Promise<Map<string, TenantPause>> {
  const reader = new TenantPauseFollower(kafka, {
    logger: silentLogger,
    groupPrefix: `${TENANT_PAUSES_GROUP_PREFIX}read-`,
    once: true,
  });
  try {
    await reader.start();
    return reader.all();
  } finally {
    await reader.close();
  }
}

/**
 * The follower a service (an ingester or a worker) keeps: refused credentials or certificates are not an outage but
 * one line naming the variables, as the service's other Kafka clients say.
 */
export function followTenantPauses(
  kafka: Kafka,
  cfg: KafkaConfig,
  o: { logger: Logger; gauge: Gauge<'tenant'>; onChange?: (tenant: string) => void },
): TenantPauseFollower {
  return new TenantPauseFollower(kafka, {
    ...o,
    refusal: (err) => {
      const refused = kafkaAccessProblem(err, cfg);
      return refused ? new ConfigError(refused.variable, refused.reason) : undefined;
    },
  });
}
