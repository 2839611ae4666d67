/**
 * `dispatch status` reading a call held after its budget ran out during a pause (src/temporal/budgetHold.ts), from
 * recorded histories (test/fixtures/histories) cut where the execution waits: held by the newest look's pause since
 * the call's end, also at a second such hold (the patch's marker is written once), not once a call was scheduled
 * again or a look found the tenant resumed, and never for a hold by a held failure (read from that failure) or a
 * dead letter.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { TENANT_PAUSED } from '../../src/contract/workflow';
import { heldAfterBudget } from '../../src/temporal/budgetHold';
import { loadHistoryFixtures } from '../support/histories';

type Event = temporal.api.history.v1.IHistoryEvent;

const payloads = (value: unknown) => ({ payloads: [defaultPayloadConverter.toPayload(value)] });

const fixtures = new Map(loadHistoryFixtures().map((f) => [f.name, f.history.events ?? []]));

/** The history up to and including the `nth` event that `is` accepts. */
function cutAt(name: string, is: (e: Event) => boolean, nth = 1): Event[] {
  const events = fixtures.get(name);
  if (!events) throw new Error(`no fixture ${name}`);
  let seen = 0;
  const at = events.findIndex((e) => is(e) && ++seen === nth);
  if (at < 0) throw new Error(`${name}: no event ${nth} of that kind`);
  return events.slice(0, at + 1);
}

async function heldBy(events: Event[]) {
  const newestFirst = [...events].reverse();
  const read = async () => ({ history: { events: newestFirst }, nextPageToken: new Uint8Array() });
  return heldAfterBudget(read, 'default', 'dispatch:acme:d', 'run');
}

/** The hold's wait (its summary says why); the wait for the budget's end before the look has none. */
const timerStarted = (e: Event) =>
  !!e.timerStartedEventAttributes &&
  Buffer.from(e.userMetadata?.summary?.data ?? [])
    .toString('utf8')
    .includes('held:');
const lookMarker = (e: Event) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity';

test('waiting after the budget ran out during a pause: held by the pause the look found', async () => {
  const held = await heldBy(cutAt('completed-after-budget-spent-hold', timerStarted));
  expect(held).toEqual({
    pause: { pausedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), reason: 'migration' },
    attemptsBefore: 0,
  });
});

test('a newest look that found the tenant resumed, or a call scheduled again: not held', async () => {
  expect(await heldBy(cutAt('completed-after-budget-spent-hold', lookMarker, 2))).toBeUndefined();
  expect(await heldBy(fixtures.get('completed-after-budget-spent-hold')!)).toBeUndefined();
});

test("a second such hold, whose call's end has no patch marker after it (the patch is recorded once): held", async () => {
  const cut = cutAt('completed-after-budget-spent-hold', timerStarted);
  const patchData = (e: Event) => e.markerRecordedEventAttributes?.details?.['patch-data'];
  const lastFailure =
    cut.length - 1 - [...cut].reverse().findIndex((e) => e.activityTaskFailedEventAttributes);
  const withoutPatch = cut.filter((e, i) => i < lastFailure || !patchData(e));
  expect(withoutPatch).toHaveLength(cut.length - 1);
  expect(await heldBy(withoutPatch)).toMatchObject({ pause: { reason: 'migration' } });
});

test('looks after a call that ended held by a held failure: read from that failure, not here', async () => {
  const cut = cutAt('completed-after-budget-spent-hold', timerStarted);
  const held: Event = {
    activityTaskFailedEventAttributes: { failure: { applicationFailureInfo: { type: TENANT_PAUSED } } },
  };
  const asHeld = cut.map((e) => (e.activityTaskFailedEventAttributes ? held : e));
  expect(await heldBy(asHeld)).toBeUndefined();
});

test('a hold by a held failure, or a budget spent with no pause: not this kind of hold', async () => {
  expect(await heldBy(cutAt('completed-after-hold', timerStarted))).toBeUndefined();
  expect(await heldBy(fixtures.get('failed-budget-spent')!)).toBeUndefined();
});

test('a look that failed has no answer: the look before it says the pause', async () => {
  const cut = cutAt('completed-after-budget-spent-hold', timerStarted);
  const failedLook: Event = {
    markerRecordedEventAttributes: {
      markerName: 'core_local_activity',
      failure: { message: 'tenant pauses: a defect' },
      details: { data: payloads({ activity_type: 'tenantPauseOf' }) },
    },
  };
  expect(await heldBy([...cut, failedLook])).toMatchObject({ pause: { reason: 'migration' } });
});

test("a second call's hold counts the attempts its activity id says came before it", async () => {
  const cut = cutAt('completed-after-budget-spent-hold', timerStarted);
  const renamed = cut.map((e) =>
    e.activityTaskScheduledEventAttributes
      ? {
          ...e,
          activityTaskScheduledEventAttributes: {
            ...e.activityTaskScheduledEventAttributes,
            activityId: 'call-1-after-4',
          },
        }
      : e,
  );
  expect(await heldBy(renamed)).toMatchObject({ attemptsBefore: 4 });
});
