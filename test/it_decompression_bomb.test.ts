/**
 * A decompression bomb on the real stack: a record batch of a few KiB that the broker accepts and that decodes
 * to 512 MiB. The ingester must refuse it as undecodable before decoding it (its peak resident memory stays
 * under the pod's limit in deploy/k8s), hold its partition at the batch, name it in the log and the gauge, and
 * keep relaying every other partition.
 */
import fs from 'node:fs';
import path from 'node:path';
import { topics } from '../src/contract';
import { ensureTopics, tenantTopicSpecs } from '../src/kafka/topics';
import { REPO_ROOT } from './support/cli';
import { sendDecompressionBomb } from './support/poisonBatch';
import { metricValue } from './support/relay';
import { type Harness, createHarness } from './support/relayHarness';
import { uniqueTenant } from './support/names';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

let h: Harness;
afterEach(async () => {
  await h?.cleanup();
});

/** The ingester container's memory limit in the shipped manifest, in bytes. */
function ingesterMemoryLimit(): number {
  const manifest = fs.readFileSync(path.join(REPO_ROOT, 'deploy', 'k8s', 'ingester-deployment.yaml'), 'utf8');
  const mi = /limits:\s*\n\s*memory:\s*(\d+)Mi/.exec(manifest)?.[1];
  if (!mi) throw new Error('no memory limit in deploy/k8s/ingester-deployment.yaml');
  return Number(mi) * 1024 * 1024;
}

/** The highest resident set size a process has had (VmHWM), in bytes. */
function peakRss(pid: number): number {
  const kb = /VmHWM:\s*(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (!kb) throw new Error(`no VmHWM for process ${pid}`);
  return Number(kb) * 1024;
}

test('a decompression bomb holds its own partition without being decoded; the other partitions and tenants flow', async () => {
  const a = uniqueTenant();
  const b = uniqueTenant();
  h = await createHarness({
    tenant: a,
    partitions: 2,
    env: { DISPATCH_TOPIC_PATTERN: `^poimen\\.(${a}|${b})\\.dispatch$` },
  });
  const admin = h.kafka.admin();
  await admin.connect();
  await ensureTopics(admin, tenantTopicSpecs(b, { partitions: 2 }));
  await admin.disconnect();
  await h.startWorker();
  const ingester = await h.startIngester();
  const send = (tenant: string, partition: number, key: string) =>
    h.producer.send({
      topic: topics.dispatch(tenant),
      acks: -1,
      messages: [{ partition, key: `${tenant}:${key}`, value: h.dispatchValue(key) }],
    });
  const relayed = (keys: string[], what: string) =>
    h.api.waitFor((api) => keys.every((k) => api.requestsFor(k).length === 1), 60_000, what);
  const everywhere = [
    [a, 0],
    [a, 1],
    [b, 0],
    [b, 1],
  ] as const;

  for (const [t, p] of everywhere) await send(t, p, `${t}-p${p}-before`);
  await relayed(
    everywhere.map(([t, p]) => `${t}-p${p}-before`),
    'every partition relayed before the bomb',
  );

  const bombBytes = 512 * 1024 * 1024;
  const bombOffset = await sendDecompressionBomb(h.producer, topics.dispatch(a), 0, bombBytes);
  for (const [t, p] of everywhere) await send(t, p, `${t}-p${p}-after`);

  await relayed(
    [`${a}-p1-after`, `${b}-p0-after`, `${b}-p1-after`],
    'the other partitions relayed after the bomb',
  );
  await waitFor(
    async () =>
      metricValue(await ingester.metrics(), 'poimen_ingest_undecodable_partitions', {
        topic: topics.dispatch(a),
        partition: '0',
      }) === 1,
    { timeoutMs: 30_000, what: 'poimen_ingest_undecodable_partitions naming the bomb partition' },
  );
  // Held at the bomb: nothing after it relayed, nothing skipped or dead-lettered, the offset not moved past it.
  expect(h.api.requestsFor(`${a}-p0-after`)).toHaveLength(0);
  expect((await h.offsets(a)).find((p) => p.partition === 0)?.committed).toBe(Number(bombOffset));
  const line = fs
    .readFileSync(ingester.logFile, 'utf8')
    .split('\n')
    .find((l) => l.includes('decodes to more than') && l.includes(topics.dispatch(a)));
  expect(line).toContain('"partition":0');
  expect(line).toContain(`"offset":"${bombOffset}"`);
  // Refused, not decoded: the ingester never held anything near the bomb's size.
  expect(peakRss(ingester.child.pid!)).toBeLessThan(Math.min(ingesterMemoryLimit(), bombBytes / 2));
});
