/**
 * The visibility query that admission uses for a tenant alone (src/temporal/visibilityCloses.ts), against the
 * stack's real Temporal: the server accepts it (256 of the longest ids the contract allows too), answers a closed
 * run, and does not answer a running one until it closes. The per-execution watch here only records what was
 * handed to it: a refused or wrong query would show as a hand-over, not as a pass. And the shipped ingester, on this
 * stack's SQLite visibility (a store that scans the namespace for the query), never asks it: each lone dispatch is
 * watched by its own long poll (`poimen_ingest_lone_closes_total`).
 */
import { setMaxListeners } from 'node:events';
import { IDS_PER_QUERY, closedQuery, listClosed } from '../src/temporal/closedRuns';
import { VisibilityCloses } from '../src/temporal/visibilityCloses';
import { visibilityStore } from '../src/temporal/visibilityStore';
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

jest.setTimeout(120_000);

let h: Harness;

afterEach(async () => {
  await h?.cleanup();
});

async function runIdOf(key: string): Promise<string> {
  const handle = h.client.workflow.getHandle(h.wfId(key));
  await waitFor(() => handle.describe().then(() => true), { timeoutMs: 60_000, what: `${key} to start` });
  return (await handle.describe()).runId;
}

test('a closed run is answered by the query, a running one only once it has closed; on SQLite the ingester keeps its long polls', async () => {
  h = await createHarness();
  await h.startWorker();
  const ingester = await h.startIngester();
  h.api.scriptFor('held', { kind: 'hold' });
  // Beside them, more of this lone tenant's: the ingester watches one a second precisely (its pace), the rest so.
  const more = ['more-1', 'more-2', 'more-3', 'more-4'];
  for (const k of ['done', 'held', ...more]) await h.publish(h.dispatchValue(k));
  const done = await runIdOf('done');
  await h.client.workflow.getHandle(h.wfId('done')).result();
  const held = await runIdOf('held');
  await waitFor(async () => h.api.heldCount === 1, { timeoutMs: 30_000, what: 'the held call to arrive' });

  const handedOver: string[] = [];
  const closes = new VisibilityCloses({
    list: (query, token) => listClosed(h.client, query, token),
    watchOne: async (workflowId) => (handedOver.push(workflowId), true),
    intervalMs: 100,
    handOverMs: 60_000,
  });
  const abort = new AbortController();
  setMaxListeners(0, abort.signal);
  const heldSeen = jest.fn();
  const heldWatch = closes.watch(h.wfId('held'), held, abort.signal).then(heldSeen);
  // Visibility is written after the close, not with it: the done run is answered within seconds.
  await expect(closes.watch(h.wfId('done'), done, abort.signal)).resolves.toBe(true);
  // A run of the same id that is not the closed one is not answered by it.
  const other = closes.watch(h.wfId('done'), 'not-a-run-of-it', abort.signal);
  await new Promise((r) => setTimeout(r, 1500));
  expect(heldSeen).not.toHaveBeenCalled();
  expect(closes.size).toBe(2);

  expect(h.api.release()).toBe(1);
  await h.client.workflow.getHandle(h.wfId('held')).result();
  await heldWatch;
  expect(heldSeen).toHaveBeenCalledWith(true);
  expect(handedOver).toEqual([]);
  abort.abort(new Error('done'));
  await expect(other).rejects.toThrow('done');

  // The ingester's own watches of this lone tenant's dispatches: this stack's store (the dev server's SQLite)
  // scans the namespace for the query, so the shipped ingester never asks it, and watches each by its long poll.
  await expect(visibilityStore(h.client)()).resolves.toEqual({ indexed: false, store: 'sqlite' });
  for (const k of more) await h.client.workflow.getHandle(h.wfId(k)).result();
  const lone = async () => {
    const metrics = await fetch(`http://127.0.0.1:${ingester.metricsPort}/metrics`).then((r) => r.text());
    const count = (via: string) =>
      Number(
        new RegExp(`^poimen_ingest_lone_closes_total\\{via="${via}"\\} (\\d+)$`, 'm').exec(metrics)?.[1] ?? 0,
      );
    return { visibility: count('visibility'), longPoll: count('long_poll') };
  };
  await waitFor(async () => (await lone()).longPoll >= 2, {
    timeoutMs: 10_000,
    what: 'lone closes by long poll',
  });
  expect((await lone()).visibility).toBe(0);
});

test(`a query for ${IDS_PER_QUERY} of the longest workflow ids the contract allows is accepted`, async () => {
  h = await createHarness();
  // dispatch:<tenant>:<dispatch_key>, the key at its 256 characters.
  const ids = Array.from({ length: IDS_PER_QUERY }, (_, i) => h.wfId(`${i}-`.padEnd(256, 'k')));
  await expect(listClosed(h.client, closedQuery(ids))).resolves.toEqual({ executions: [] });
});
