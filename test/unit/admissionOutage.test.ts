/**
 * Admission per tenant beside a partition's outage (src/ingest/admission.ts, pausedPartitions.ts): an outage the
 * backoff resumed ends when its partition's next record is only refused a slot, not while a record of it is being
 * tried again. Real Kafka and Temporal: it_ingest_production.
 */
import { handleRecord } from '../../src/ingest/startDispatch';
import { waitFor } from '../support/wait';
import { batchPayload, boundIngester, watches } from '../support/admissionRig';
import { ingesterInternals } from '../support/ingesterInternals';

jest.mock('../../src/ingest/startDispatch', () => ({ handleRecord: jest.fn() }));
const handle = handleRecord as jest.MockedFunction<typeof handleRecord>;

beforeEach(() => handle.mockReset());

/** A tenant bound at 1 whose partition 0 is in an outage that its backoff has resumed since (a record failed). */
function inResumedOutage() {
  const w = watches();
  const b = boundIngester(1, w);
  jest.useFakeTimers();
  ingesterInternals(b.ing).paused.failed(b.consumer, 'poimen.a.dispatch', 0, 'start timed out');
  jest.runOnlyPendingTimers();
  jest.useRealTimers();
  ingesterInternals(b.ing).group.joined = true;
  return { ...b, w };
}

test('a partition an outage resumed that then finds its tenant full is waiting for room, not in an outage: the ingester stays ready', async () => {
  handle.mockImplementation(async (_ctx, { topic, message: m }, { onStarted } = {}) => {
    onStarted?.(`${topic}@${m.offset}`, 'run');
    return 'started';
  });
  // An earlier record of partition 0 failed, and the outage's backoff has resumed the partition since.
  const { ing, admission, consumer, each } = inResumedOutage();
  expect(ing.ready()).toBe(false);

  // Another partition of the tenant takes its only slot; partition 0's refetched record finds no room.
  await each(batchPayload('poimen.a.dispatch', [0], consumer, 1).payload);
  const p0 = batchPayload('poimen.a.dispatch', [5], consumer);
  await each(p0.payload);
  expect(p0.resolved).toEqual([]);
  expect(ing.ready()).toBe(true);
  admission.close();
});

test('a partition whose outage record is being tried again stays in its outage while its next record waits for room: the ingester is not ready until the try succeeds', async () => {
  let finishTry!: () => void;
  const tried = new Promise<void>((r) => (finishTry = r));
  handle.mockImplementation(async (_ctx, { topic, message: m }, { onStarted } = {}) => {
    if (m.offset === '5') await tried;
    onStarted?.(`${topic}@${m.offset}`, 'run');
    return 'started';
  });
  // Record 5 of partition 0 failed, and the outage's backoff has resumed the partition since.
  const { ing, admission, consumer, each, w } = inResumedOutage();

  // Refetched, record 5 is tried again and takes the tenant's one slot; record 6 finds no room meanwhile.
  const batch = each(batchPayload('poimen.a.dispatch', [5, 6], consumer).payload);
  await waitFor(() => handle.mock.calls.length === 1, { what: 'record 5 tried again' });
  await new Promise((r) => setImmediate(r));
  // Whether the outage is over is record 5's to say, not record 6's wait.
  expect(ing.ready()).toBe(false);
  finishTry();
  await waitFor(() => ing.ready(), { what: 'the outage over once record 5 started' });
  w.close('poimen.a.dispatch@5');
  await batch;
  admission.close();
});
