/**
 * `tenant pause`, `resume` and `status` (operations.md, "Pause and resume a tenant"): a pause is one record on the
 * pause topic (kafka/tenantPauses.ts), which every ingester and worker follows; what a pause holds back is
 * admission's (ingest/admission.ts) and the held call's (workflows/hold.ts), which a resume wakes.
 */
import os from 'node:os';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { WORKFLOW_TYPE } from '../contract/names';
import { TENANT_RESUMED_SIGNAL } from '../contract/workflow';
import type { TenantPause } from '../contract/tenantPause';
import type { KafkaAdmin, KafkaClient } from '../kafka/port';
import { readTenantPauses, writeTenantPause } from '../kafka/tenantPauses';
import { validateTenants } from './topics';

export interface PauseChange {
  /** The tenant's pause before this change; undefined when it was never paused. */
  before: TenantPause | undefined;
  after: TenantPause;
}

/** A tenant named on the command line: the contract's pattern, or one line naming it. */
export function checkTenantArg(tenant: string): void {
  validateTenants([tenant], '<tenant>');
}

/** Who runs the command, as far as the host says (a container may have no user entry). */
function operator(): string | null {
  try {
    return `${os.userInfo().username}@${os.hostname()}`;
  } catch {
    return null;
  }
}

/**
 * Pauses or resumes the tenant: writes its new state. Asked again for the state it is in, it keeps when and by whom
 * it entered it (a pause's "since … by …"), and its reason unless a new one is given.
 */
export async function setTenantPause(
  kafka: KafkaClient,
  admin: KafkaAdmin,
  change: { tenant: string; paused: boolean; reason?: string },
): Promise<PauseChange> {
  checkTenantArg(change.tenant);
  const before = (await readTenantPauses(kafka)).get(change.tenant);
  const same = before !== undefined && before.paused === change.paused;
  const after: TenantPause = {
    tenant: change.tenant,
    paused: change.paused,
    reason: change.reason ?? (same ? before.reason : null),
    at: same ? before.at : new Date().toISOString(),
    by: same ? before.by : operator(),
  };
  await writeTenantPause(kafka, admin, after);
  return { before, after };
}

/** Every tenant ever paused (or only `tenant`), with its latest pause, paused ones first, then by name. */
export async function tenantPauses(kafka: KafkaClient, tenant?: string): Promise<TenantPause[]> {
  if (tenant !== undefined) checkTenantArg(tenant);
  const all = [...(await readTenantPauses(kafka)).values()];
  return all
    .filter((p) => tenant === undefined || p.tenant === tenant)
    .sort((a, b) => Number(b.paused) - Number(a.paused) || a.tenant.localeCompare(b.tenant));
}

/** One line per tenant: `acme  paused since … by …: reason` or `acme  resumed at … by …`. */
export function pauseLine(p: TenantPause): string {
  const who = p.by ? ` by ${p.by}` : '';
  const why = p.reason ? `: ${p.reason}` : '';
  return `${p.tenant.padEnd(20)} ${p.paused ? `paused since ${p.at}` : `resumed at ${p.at}`}${who}${why}`;
}

/** Signals sent at once by `wakeHeld`: thousands of held dispatches are woken in seconds. */
const WAKE_CONCURRENCY = 32;
/** Each request of `wakeHeld` has its own deadline: the whole wake may take longer than one command's request. */
const WAKE_REQUEST_MS = 30_000;

/**
 * Wakes the tenant's held dispatches after a resume: every running execution of the tenant gets the resume signal,
 * and a held one schedules its call again at once (one that is not held ignores it). Without it each looks again on
 * its own, within an hour. Returns how many were signalled.
 */
export async function wakeHeld(client: Client, tenant: string): Promise<number> {
  checkTenantArg(tenant);
  const within = <T>(fn: () => Promise<T>) =>
    client.connection.withDeadline(Date.now() + WAKE_REQUEST_MS, fn);
  // The tenant's characters are the contract's (no quote can occur in it).
  const query = `WorkflowType = '${WORKFLOW_TYPE}' AND TenantId = '${tenant}' AND ExecutionStatus = 'Running'`;
  const running = client.workflow.list({ query })[Symbol.asyncIterator]();
  let woken = 0;
  const failed: unknown[] = [];
  const wakeNext = async (): Promise<void> => {
    for (
      let next = await within(() => running.next());
      !next.done;
      next = await within(() => running.next())
    ) {
      const { workflowId, runId } = next.value;
      try {
        await within(() => client.workflow.getHandle(workflowId, runId).signal(TENANT_RESUMED_SIGNAL));
        woken += 1;
      } catch (err) {
        // Ended since it was listed: nothing to wake. Any other failure: the others are still woken.
        if (!(err instanceof WorkflowNotFoundError)) failed.push(err);
      }
    }
  };
  await Promise.all(Array.from({ length: WAKE_CONCURRENCY }, wakeNext));
  const [first] = failed;
  if (first === undefined) return woken;
  if (first instanceof Error) first.message = `${woken} woken, ${failed.length} not: ${first.message}`;
  throw first;
}
