/**
 * Whether the namespace's visibility store answers the lone watch's query (./visibilityCloses.ts) from an index, by
 * the store's name in GetClusterInfo. A store that scans the namespace for it costs, per call, in proportion to the
 * executions retained: the dev server's SQLite took 62 ms of Temporal CPU for one id and 91 ms for 256 with 45,000
 * executions retained, against ~5 ms on a fresh one (docs/design.md, "Fair turns for tenants"). Twice a second, that
 * outgrows the long polls it replaces within hours of retention, and keeps growing for as long as the relay runs.
 * What the name does not say (a store not listed here, a server or role that does not answer GetClusterInfo, as
 * Temporal Cloud's may not) counts as indexed: the query's own failures and refusals still send the watches to
 * their long polls.
 */
import type { Client } from '@temporalio/client';
import { GRPC, grpcStatus } from './grpcStatus';

/** Stores measured to scan the namespace for `WorkflowId IN (…) AND ExecutionStatus IN (…)`. */
const SCANS = /sqlite/i;
/** Longest the question may take, the SDK's own retries within it: then it counts as a failed call. */
const DEADLINE_MS = 2000;

/** False for a store that scans the namespace for the lone watch's query; `store` as GetClusterInfo names it. */
export function answersFromIndex(store: string): boolean {
  return !SCANS.test(store);
}

/**
 * Asks the server which visibility store it runs: true unless it names one that scans. A refusal (no permission,
 * not implemented) is an unknown store, so true; any other failure rejects, as a failed List call would.
 */
export async function visibilityIndexed(client: Client): Promise<boolean> {
  try {
    const info = await client.connection.withDeadline(Date.now() + DEADLINE_MS, () =>
      client.workflowService.getClusterInfo({}),
    );
    return answersFromIndex(info.visibilityStore ?? '');
  } catch (err) {
    const code = grpcStatus(err)?.code;
    if (code === GRPC.PERMISSION_DENIED || code === GRPC.UNIMPLEMENTED) return true;
    throw err;
  }
}
