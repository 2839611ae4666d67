/**
 * The testcontainers path of the global setup, for machines with a Docker engine. Fixed host ports keep
 * Kafka's advertised listener valid across a container stop/start in fault tests.
 *
 * Not exercised on this project's CI machines (no Docker engine there); the local stack is.
 */
import { GenericContainer, type StartedTestContainer, Wait } from 'testcontainers';
import { loadStackConfig } from '../../devstack/config';
import { SEARCH_ATTRIBUTE_NAMES } from '../../src/contract';
import { devServerDynamicConfigValues } from '../../devstack/stack/devServerTuning';

const started: StartedTestContainer[] = [];

export async function startContainers(): Promise<{ kafkaBrokers: string; temporalAddress: string }> {
  const kafka = await new GenericContainer('apache/kafka:4.1.1')
    .withExposedPorts({ container: 9092, host: 9092 })
    .withEnvironment({
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_LISTENERS: 'PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093',
      KAFKA_ADVERTISED_LISTENERS: 'PLAINTEXT://127.0.0.1:9092',
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
      KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
    })
    .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
    .start();
  started.push(kafka);
  const temporal = await new GenericContainer('temporalio/temporal:1.5.1')
    .withExposedPorts({ container: 7233, host: 7233 }, { container: 8233, host: 8233 })
    .withCommand([
      'server',
      'start-dev',
      '--ip',
      '0.0.0.0',
      // Persist inside the container so a stop/start in a fault test keeps the executions.
      '--db-filename',
      '/tmp/temporal.db',
      // The local stack's dev server values (fairness, the transfer poll rate): the suites assume that server.
      ...devServerDynamicConfigValues(loadStackConfig()).flatMap((kv) => ['--dynamic-config-value', kv]),
      ...SEARCH_ATTRIBUTE_NAMES.flatMap((n) => ['--search-attribute', `${n}=Keyword`]),
    ])
    .withWaitStrategy(Wait.forListeningPorts())
    .start();
  started.push(temporal);
  process.env.POIMEN_TEST_CONTAINERS = `kafka=${kafka.getId()},temporal=${temporal.getId()}`;
  return { kafkaBrokers: '127.0.0.1:9092', temporalAddress: '127.0.0.1:7233' };
}

export async function stopContainers(): Promise<void> {
  for (const c of started.reverse()) await c.stop();
}
