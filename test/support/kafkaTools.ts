/**
 * Kafka's own command-line tools, from the jars the local stack caches (`stack provision --kafka-tools`), as an
 * operator's Kafka distribution has them: kafka-topics.sh and kafka-broker-api-versions.sh are thin wrappers
 * around these classes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadStackConfig } from '../../devstack/config';
import { ensureKafkaTools } from '../../devstack/stack/provision';
import { consoleProgress } from '../../devstack/stack/progress';

/** A first download of the tools' jars from Maven Central took 20 s here; a loaded machine takes longer. */
export const KAFKA_TOOLS_PROVISION_TIMEOUT_MS = 10 * 60_000;

export interface KafkaTools {
  /** The variables deploy/scripts/create-topics.sh reads to find the tools. */
  env: { KAFKA_TOPICS: string; KAFKA_BROKER_API_VERSIONS: string };
  dir: string;
}

export async function kafkaTools(): Promise<KafkaTools> {
  const libs = await ensureKafkaTools(loadStackConfig(), consoleProgress('kafka-tools'));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-kafka-tools-'));
  const wrapper = (name: string, mainClass: string) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, `#!/bin/sh\nexec java -Xmx256m -cp '${libs}/*' ${mainClass} "$@"\n`, {
      mode: 0o755,
    });
    return file;
  };
  return {
    dir,
    env: {
      KAFKA_TOPICS: wrapper('kafka-topics.sh', 'org.apache.kafka.tools.TopicCommand'),
      KAFKA_BROKER_API_VERSIONS: wrapper(
        'kafka-broker-api-versions.sh',
        'org.apache.kafka.tools.BrokerApiVersionsCommand',
      ),
    },
  };
}
