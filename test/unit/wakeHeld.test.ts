/**
 * `tenant resume`'s wake (src/ops/tenantPause.ts, wakeHeld): every running execution of the tenant is signalled, 32
 * at a time, each request under its own deadline; one that fails does not stop the others, and the failure says how
 * many were woken and how many not. The client is a stand-in: what is pinned is the loop, not Temporal.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import { TENANT_RESUMED_SIGNAL } from '../../src/contract/workflow';
import { wakeHeld } from '../../src/ops/tenantPause';

function client(n: number, fail: (i: number) => Error | undefined) {
  const signalled: string[] = [];
  const queries: string[] = [];
  const fake = {
    connection: { withDeadline: <T>(_: number, fn: () => Promise<T>) => fn() },
    workflow: {
      list({ query }: { query: string }) {
        queries.push(query);
        return (async function* () {
          for (let i = 0; i < n; i++) yield { workflowId: `dispatch:acme:d-${i}`, runId: `r-${i}` };
        })();
      },
      getHandle: (id: string) => ({
        signal: async (name: string) => {
          expect(name).toBe(TENANT_RESUMED_SIGNAL);
          await new Promise((r) => setImmediate(r));
          const err = fail(Number(id.split('-').pop()));
          if (err) throw err;
          signalled.push(id);
        },
      }),
    },
  };
  return { client: fake as unknown as Client, signalled, queries };
}

test('signals every running execution of the tenant and counts them', async () => {
  const c = client(100, () => undefined);
  await expect(wakeHeld(c.client, 'acme')).resolves.toBe(100);
  expect(new Set(c.signalled).size).toBe(100);
  expect(c.queries).toEqual([
    "WorkflowType = 'dispatch' AND TenantId = 'acme' AND ExecutionStatus = 'Running'",
  ]);
});

test('one that ended since it was listed is not a failure; one refused does not stop the others', async () => {
  const c = client(100, (i) =>
    i === 3
      ? new WorkflowNotFoundError('gone', 'w', 'r')
      : i === 5
        ? new Error('PERMISSION_DENIED')
        : undefined,
  );
  await expect(wakeHeld(c.client, 'acme')).rejects.toThrow('98 woken, 1 not: PERMISSION_DENIED');
  expect(c.signalled).toHaveLength(98);
});
