/**
 * Produces records with Apache Kafka's Java client (test/support/JavaProducer.java), the way a tenant's Java
 * service would: the relay's decoding is then tested against batches it did not write itself.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { loadStackConfig } from '../../devstack/config';
import { kafkaLibsDir } from '../../devstack/stack/provision';

export type KafkaCodec = 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd';
export const KAFKA_CODECS: readonly KafkaCodec[] = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];

export interface JavaRecord {
  codec: KafkaCodec;
  partition: number;
  key: string;
  value: string;
}

export interface CodecReport {
  codec: KafkaCodec;
  sent: number;
  /** The Java producer's compression-rate-avg: the mean over batches of compressed / uncompressed size (1 for none). */
  compressionRate: number | null;
}

/** The cached broker runtime (`node devstack/bin/poimen-dev.js stack provision`) holds kafka-clients and its codec jars. */
function classpath(): string {
  const libs = kafkaLibsDir(loadStackConfig());
  if (!fs.existsSync(libs) || !fs.readdirSync(libs).some((j) => j.startsWith('kafka-clients-'))) {
    throw new Error(
      `no kafka-clients jar in ${libs}: run \`node devstack/bin/poimen-dev.js stack provision\` first`,
    );
  }
  return `${libs}/*`;
}

export function produceWithJava(
  bootstrap: string,
  topic: string,
  records: JavaRecord[],
  timeoutMs = 120_000,
): Promise<CodecReport[]> {
  for (const r of records) {
    if (/[\t\n]/.test(r.key + r.value)) throw new Error(`record ${r.key} has a tab or newline`);
  }
  const source = path.join(__dirname, 'JavaProducer.java');
  return new Promise((resolve, reject) => {
    const child = spawn('java', ['-Xmx256m', '-cp', classpath(), source, bootstrap, topic], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) {
        reject(new Error(`java producer failed (${signal ?? `exit ${code}`}): ${stderr.slice(-2000)}`));
        return;
      }
      resolve(
        stdout
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as CodecReport),
      );
    });
    child.stdin.end(records.map((r) => `${r.codec}\t${r.partition}\t${r.key}\t${r.value}\n`).join(''));
  });
}
