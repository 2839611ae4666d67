/**
 * The look of a held execution (src/activities/tenantPauseOf.ts, a local activity): the worker's answer from the
 * pauses it follows, and no answer while it does not know them (the look is then retried).
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

test("the worker's look answers from the pauses it follows, and fails while it does not know them", async () => {
  const known = { problem: undefined as string | undefined };
  const { tenantPauseOf } = createTenantPauseOf({
    tenantPause: (tenant) => (tenant === 'acme' ? PAUSE : undefined),
    pausesUnknown: () => known.problem,
  });
  const acts = { tenantPauseOf };
  await expect(acts.tenantPauseOf('acme')).resolves.toEqual({ pausedAt: PAUSE.at, reason: PAUSE.reason });
  await expect(acts.tenantPauseOf('beta')).resolves.toBeNull();
  known.problem = 'Kafka: connect ECONNREFUSED (tenant pauses not followed)';
  await expect(acts.tenantPauseOf('beta')).rejects.toThrow('the tenant pauses are not known: Kafka: connect');
});
