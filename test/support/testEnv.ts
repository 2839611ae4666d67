/**
 * What the global setup decided, as seen by test files: the addresses of the real services, and whether
 * this run controls them (and so may stop and restart them in fault tests).
 */
export type StackMode = 'local' | 'testcontainers' | 'external';

export interface TestServices {
  mode: StackMode;
  kafkaBrokers: string[];
  temporalAddress: string;
  namespace: string;
}

export function testServices(): TestServices {
  const mode = (process.env.POIMEN_TEST_STACK_MODE ?? 'external') as StackMode;
  return {
    mode,
    kafkaBrokers: (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(','),
    temporalAddress: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
    namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
  };
}
