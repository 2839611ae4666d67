/**
 * A start that Temporal refuses for this record alone (INVALID_ARGUMENT: here a workflow input over the
 * server's blob size limit) is dead-lettered with the server's reason; it must not be retried as an outage,
 * which would block its partition, and every record behind it, for good. The refusal comes from a real dev
 * server of its own, started with a lowered `limit.blobSize.error` (dynamic config), beside the stack's.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadStackConfig } from '../src/config';
import { LocalStack } from '../src/devstack/stack/stack';
import { freePort } from './support/cli';
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

const BLOB_LIMIT_BYTES = 64 * 1024;

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
      POIMEN_STACK_TEMPORAL_DYNAMIC_CONFIG: `limit.blobSize.error=${BLOB_LIMIT_BYTES} limit.blobSize.warn=${BLOB_LIMIT_BYTES / 2}`,
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
