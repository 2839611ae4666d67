/**
 * A redelivery of a record whose dispatch already failed (dead-lettered) on the real stack: a rebalance or an
 * offset reset before the commit hands the record out again. It must make no second run: no second call to the
 * runs API and no second dead letter. Only `dlq replay` (a new record) runs a failed dispatch again, and a
 * redelivery of that replay is absorbed the same way. Calls are counted per key on the real node:http runs API
 * double, whose 422 script would answer a second call too (its dedup cannot hide one).
 */
import type { Admin } from 'kafkajs';
import { topics, type DlqRecord } from '../src/contract';
import { cliEnv, runCli } from './support/cli';
import { type Harness, createHarness } from './support/relayHarness';
import type { RelayProcess } from './support/relay';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

let h: Harness | undefined;
let admin: Admin | undefined;
afterEach(async () => {
  await admin?.disconnect();
  admin = undefined;
  await h?.cleanup();
  h = undefined;
});

/** The dispatch's newest run, once it is closed (its dead letter, if any, is then written). */
async function closedRun(hh: Harness, key: string): Promise<{ runId: string; status: string }> {
  let last = { runId: '', status: '' };
  await waitFor(
    async () => {
      const d = await hh.client.workflow.getHandle(hh.wfId(key)).describe();
      last = { runId: d.runId, status: d.status.name };
      return last.status !== 'RUNNING';
    },
    { what: `${key}'s newest run to close` },
  );
  return last;
}

/** Stops the ingester, sets the group back to the topic's start, and starts another: every record comes again. */
async function redeliverAll(hh: Harness, a: Admin, ingester: RelayProcess, label: string) {
  expect(await ingester.stop()).toBe(0);
  await a.resetOffsets({ groupId: hh.groupId, topic: topics.dispatch(hh.tenant), earliest: true });
  return hh.startIngester(label);
}

/** A later record on the same partition, handled and committed: everything before it was handled too. */
async function drainedPast(hh: Harness, marker: string): Promise<void> {
  await hh.publish(hh.dispatchValue(marker), { key: `${hh.tenant}:${marker}` });
  await hh.expectCommittedAtLogEnd(60_000);
  await waitFor(
    async () => (await hh.client.workflow.getHandle(hh.wfId(marker)).describe()).status.name === 'COMPLETED',
    { what: `${marker} to complete` },
  );
}

const failuresOf = (records: DlqRecord[], key: string) =>
  records.filter((r) => r.type === 'dispatch_failure' && r.dispatch_key === key);

test('a redelivered record of a failed dispatch makes no second call and no second dead letter; only a replay runs it again, once', async () => {
  h = await createHarness();
  admin = h.kafka.admin();
  await admin.connect();
  await h.startWorker();
  const first = await h.startIngester('ingest-1');
  // The API refuses every call of `a` (422, no retry): each run of it is one call and one dead letter.
  h.api.scriptFor('a', ...Array.from({ length: 5 }, () => ({ kind: 'status' as const, status: 422 })));
  await h.publish(h.dispatchValue('a'), { key: `${h.tenant}:a` });
  const failed = await closedRun(h, 'a');
  expect(failed.status).toBe('FAILED');
  const [dead] = failuresOf(await h.readDlq(1), 'a');
  expect(dead?.run_id).toBe(failed.runId);
  await h.expectCommittedAtLogEnd();

  // The record comes again (as after a rebalance before its commit).
  const second = await redeliverAll(h, admin, first, 'ingest-2');
  await drainedPast(h, 'm1');
  expect({ run: (await closedRun(h, 'a')).runId, calls: h.api.requestsFor('a').length }).toEqual({
    run: failed.runId,
    calls: 1,
  });
  expect(failuresOf(await h.readDlq(1), 'a').map((r) => r.id)).toEqual([dead!.id]);

  // An operator's replay is a new record: it runs the dispatch again, and its failure is a new dead letter.
  const replay = await runCli(['dlq', 'replay', '--tenant', h.tenant, '--json'], cliEnv(), 120_000);
  expect(replay.code).toBe(0);
  await h.api.waitFor((api) => api.requestsFor('a').length === 2, 60_000, 'the replay to call the API');
  const replayed = await closedRun(h, 'a');
  expect(replayed.runId).not.toBe(failed.runId);
  await waitFor(async () => failuresOf(await h!.readDlq(1), 'a').length === 2, {
    what: 'the second dead letter',
  });
  const ids = failuresOf(await h.readDlq(2), 'a').map((r) => r.id);
  expect(new Set(ids).size).toBe(2);

  // Both records, the original and the replay, come again: neither runs the dispatch a third time.
  await redeliverAll(h, admin, second, 'ingest-3');
  await drainedPast(h, 'm2');
  expect({ run: (await closedRun(h, 'a')).runId, calls: h.api.requestsFor('a').length }).toEqual({
    run: replayed.runId,
    calls: 2,
  });
  expect(failuresOf(await h.readDlq(2), 'a').map((r) => r.id)).toEqual(ids);
});
