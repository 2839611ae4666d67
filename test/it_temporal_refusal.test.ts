/**
 * A start that Temporal refuses for this record alone (INVALID_ARGUMENT: here a workflow input over the
 * server's blob size limit) is dead-lettered with the server's reason; it must not be retried as an outage,
 * which would block its partition, and every record behind it, for good. A refusal for the namespace (a search
 * attribute the starts set removed while the relay runs) is an outage instead: every valid record would be
 * dead-lettered otherwise. The refusals come from a real dev server of its own, started with a lowered
 * `limit.blobSize.error` and search attribute value limit (dynamic config), beside the stack's, whose
 * namespace the last test changes. The per-record answers are the server's own words, matched by
 * src/temporal/startRefusal.ts: these tests keep that matching true to a real server.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Connection } from '@temporalio/client';
import { loadStackConfig } from '../devstack/config';
import { topics } from '../src/contract';
import { LocalStack } from '../devstack/stack/stack';
import { ensureSearchAttributes } from '../src/temporal/searchAttributes';
import { freePort } from './support/cli';
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

const BLOB_LIMIT_BYTES = 64 * 1024;
/** Below the 1 KiB of JSON the relay indexes a workflow_ref up to (the server's default is 2 KiB). */
const SA_VALUE_LIMIT_BYTES = 256;

let small: LocalStack | undefined;
let stateDir: string;
let h: Harness;

beforeAll(async () => {
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-blob-limit-'));
  const port = await freePort();
  small = new LocalStack(
    loadStackConfig({
      ...process.env,
      POIMEN_STATE_DIR: stateDir,
      POIMEN_STACK_TEMPORAL_PORT: String(port),
      POIMEN_STACK_TEMPORAL_UI_PORT: String(await freePort()),
      POIMEN_STACK_TEMPORAL_METRICS_PORT: String(await freePort()),
      POIMEN_STACK_TEMPORAL_IN_MEMORY: 'true',
      POIMEN_STACK_TEMPORAL_DYNAMIC_CONFIG: `limit.blobSize.error=${BLOB_LIMIT_BYTES} limit.blobSize.warn=${BLOB_LIMIT_BYTES / 2} frontend.searchAttributesSizeOfValueLimit=${SA_VALUE_LIMIT_BYTES}`,
    }),
  );
  await small.startService('temporal');
});

afterAll(async () => {
  await small?.stopService('temporal');
  fs.rmSync(stateDir, { recursive: true, force: true });
});

afterEach(async () => {
  await h?.cleanup();
});

test('a start refused with INVALID_ARGUMENT is dead-lettered with the reason, and the records behind it are relayed', async () => {
  h = await createHarness({ temporalAddress: small!.services.temporal.address });
  await h.startWorker();
  await h.startIngester();
  // Within DISPATCH_MAX_BYTES and the relay's own input bound, over this server's blob limit.
  const big = h.dispatchValue('too-big', { input: { blob: 'x'.repeat(2 * BLOB_LIMIT_BYTES) } });
  await h.publish(big);
  await h.publish(h.dispatchValue('behind-1'));
  await h.publish(h.dispatchValue('behind-2'));

  for (const key of ['behind-1', 'behind-2']) {
    const handle = h.client.workflow.getHandle(h.wfId(key));
    await waitFor(() => handle.describe().then((d) => d.status.name === 'COMPLETED'), {
      timeoutMs: 60_000,
      what: `${key} to be relayed past the refused record`,
    });
  }
  const dlq = await h.readDlq(1);
  expect(dlq).toHaveLength(1);
  expect(dlq[0]).toMatchObject({ type: 'malformed_dispatch', dispatch_key: 'too-big' });
  expect(dlq[0]!.error).toMatch(/Temporal refused the start \(INVALID_ARGUMENT\)/);
  expect(h.api.requestsFor('too-big')).toHaveLength(0);
  await h.expectCommittedAtLogEnd();
});

test('a search attribute value over the namespace’s size limit is this record’s refusal: dead-lettered, the rest relayed', async () => {
  h = await createHarness({ temporalAddress: small!.services.temporal.address });
  await h.startWorker();
  await h.startIngester();
  const ref = 'r'.repeat(2 * SA_VALUE_LIMIT_BYTES);
  await h.publish(JSON.stringify({ workflow_ref: ref, input: {}, goal_id: null, dispatch_key: 'long-ref' }));
  await h.publish(h.dispatchValue('behind'));
  const handle = h.client.workflow.getHandle(h.wfId('behind'));
  await waitFor(() => handle.describe().then((d) => d.status.name === 'COMPLETED'), {
    timeoutMs: 60_000,
    what: 'the record behind to be relayed',
  });
  const dlq = await h.readDlq(1);
  expect(dlq).toHaveLength(1);
  expect(dlq[0]).toMatchObject({ type: 'malformed_dispatch', dispatch_key: 'long-ref' });
  expect(dlq[0]!.error).toMatch(/INVALID_ARGUMENT\): search attribute WorkflowRef value size \d+ exceeds/);
  await h.expectCommittedAtLogEnd();
});

async function readyz(metricsPort: number): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/readyz`);
  return { status: res.status, text: await res.text() };
}

async function dlqEnd(harness: Harness): Promise<number> {
  const admin = harness.kafka.admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topics.dlq(harness.tenant));
    return offsets.reduce((sum, o) => sum + Number(o.high), 0);
  } finally {
    await admin.disconnect();
  }
}

test('a search attribute removed from the namespace pauses the partitions, naming the cause, and dead-letters nothing; re-added, the records start', async () => {
  h = await createHarness({ temporalAddress: small!.services.temporal.address });
  // The harness's client was made from a Connection.
  const connection = h.client.connection as Connection;
  const namespace = h.client.options.namespace;
  await h.startWorker();
  let metricsPort = 0;
  await h.startIngester('ingest', (p) => (metricsPort = p));
  const completed = async (key: string) => {
    const handle = h.client.workflow.getHandle(h.wfId(key));
    await waitFor(
      () =>
        handle
          .describe()
          .then((d) => d.status.name === 'COMPLETED')
          .catch(() => false),
      {
        timeoutMs: 90_000,
        what: `${key} to complete`,
      },
    );
  };
  await h.publish(h.dispatchValue('before'));
  await completed('before');

  const removed = 'DispatchKey';
  // A query naming an attribute goes through the namespace's attribute mapping as a start does: refused once the
  // frontend serves the removal.
  const refusesQuery = () =>
    connection.workflowService
      .countWorkflowExecutions({ namespace, query: `${removed} = 'x'` })
      .then(() => false)
      .catch(() => true);
  await connection.operatorService.removeSearchAttributes({ namespace, searchAttributes: [removed] });
  try {
    await waitFor(refusesQuery, { timeoutMs: 60_000, what: `the namespace to refuse ${removed}` });
    for (const key of ['during-1', 'during-2', 'during-3']) await h.publish(h.dispatchValue(key));
    await waitFor(
      async () => {
        const r = await readyz(metricsPort);
        return r.status === 503 && r.text.includes('paused') && r.text.includes(removed);
      },
      { timeoutMs: 60_000, what: `/readyz to report the partition paused, naming ${removed}` },
    );
    // Several backoffs' worth of retries (250 ms doubling), and still nothing dead-lettered.
    await waitFor(async () => Number((await readyz(metricsPort)).text.match(/ for (\d+)s:/)?.[1] ?? 0) >= 3, {
      timeoutMs: 30_000,
      what: 'the outage to have lasted 3 s',
    });
    expect(await dlqEnd(h)).toBe(0);
  } finally {
    await ensureSearchAttributes(connection, namespace);
  }
  for (const key of ['during-1', 'during-2', 'during-3']) await completed(key);
  await waitFor(async () => (await readyz(metricsPort)).status === 200, { what: '/readyz ready again' });
  expect(await dlqEnd(h)).toBe(0);
  for (const key of ['during-1', 'during-2', 'during-3']) expect(h.api.requestsFor(key)).toHaveLength(1);
  await h.expectCommittedAtLogEnd();
});
