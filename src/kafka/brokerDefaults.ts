import { type Admin, ConfigResourceTypes } from 'kafkajs';

/**
 * The cluster's `default.replication.factor`, as its lowest-numbered broker reports it (a static broker setting,
 * the same on every broker of a sane cluster). Undefined when the broker refuses to say (no DescribeConfigs
 * permission): it only feeds a warning, never a reason to fail. Connection failures still propagate.
 */
export async function clusterDefaultReplicationFactor(admin: Admin): Promise<number | undefined> {
  try {
    const { brokers } = await admin.describeCluster();
    const broker = [...brokers].sort((a, b) => a.nodeId - b.nodeId)[0];
    if (!broker) return undefined;
    const res = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [
        {
          type: ConfigResourceTypes.BROKER,
          name: String(broker.nodeId),
          configNames: ['default.replication.factor'],
        },
      ],
    });
    const entry = res.resources[0]?.configEntries.find((c) => c.configName === 'default.replication.factor');
    const value = Number(entry?.configValue);
    return Number.isInteger(value) && value > 0 ? value : undefined;
  } catch (err) {
    if ((err as { name?: unknown } | undefined)?.name === 'KafkaJSProtocolError') return undefined;
    throw err;
  }
}
