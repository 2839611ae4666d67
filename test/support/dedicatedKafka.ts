/**
 * A dedicated single broker from the cached Kafka jars (the project's own stack code), with broker settings the
 * shared stack does not have, e.g. a `default.replication.factor` above 1. Stopped by its own pid.
 */
import fs from 'node:fs';
import { loadStackConfig } from '../../devstack/config';
import { silentProgress } from '../../devstack/stack/progress';
import { ensureKafka } from '../../devstack/stack/provision';
import { kafkaService, stopDaemon } from '../../devstack/stack/services';
import { freePort } from './cli';
import { waitFor } from './wait';

export interface DedicatedKafka {
  brokers: string;
  stop(): Promise<void>;
}

export async function startKafkaWithProperties(dir: string, properties: string[]): Promise<DedicatedKafka> {
  const ports = new Set<number>();
  while (ports.size < 2) ports.add(await freePort());
  const [port, controllerPort] = [...ports] as [number, number];
  const cfg = loadStackConfig({
    ...process.env,
    POIMEN_STATE_DIR: dir,
    POIMEN_STACK_KAFKA_PORT: String(port),
    POIMEN_STACK_KAFKA_CONTROLLER_PORT: String(controllerPort),
  });
  await ensureKafka(cfg, silentProgress);
  const service = kafkaService(cfg, undefined, properties);
  await service.start();
  try {
    await waitFor(() => service.isReady(), {
      timeoutMs: 120_000,
      intervalMs: 250,
      what: 'dedicated Kafka broker',
    });
  } catch (err) {
    await stopDaemon(service.pidFile);
    const tail = fs.existsSync(service.logFile) ? fs.readFileSync(service.logFile, 'utf8').slice(-3000) : '';
    throw new Error(`${(err as Error).message}; log ${service.logFile}:\n${tail}`, { cause: err });
  }
  return {
    brokers: `127.0.0.1:${port}`,
    stop: async () => {
      await stopDaemon(service.pidFile);
    },
  };
}
