/**
 * The look of a held execution (src/activities/tenantPauseOf.ts, a local activity): the worker's answer from the
 * pauses it last read, as the worker's calls do.
 */
import { createTenantPauseOf } from '../../src/activities/tenantPauseOf';
import type { TenantPause } from '../../src/contract/tenantPause';

const PAUSE: TenantPause = {
  tenant: 'acme',
  paused: true,
  reason: 'runs API migration',
  at: '2026-12-06T08:00:00.000Z',
  by: 'ops@host',
};

test("the worker's look answers from the pauses it last read, also while its follow is broken", async () => {
  const { tenantPauseOf } = createTenantPauseOf({
    tenantPause: (tenant) => (tenant === 'acme' ? PAUSE : undefined),
  });
  await expect(tenantPauseOf('acme')).resolves.toEqual({ pausedAt: PAUSE.at, reason: PAUSE.reason });
  // As the worker's calls do (recordedAttempt.ts): a look that failed while Kafka is out would be retried inside one
  // workflow task, which Temporal extends every few seconds with events of its own, until the history is too long.
  await expect(tenantPauseOf('beta')).resolves.toBeNull();
});
