/**
 * Whether the namespace's visibility store answers the lone watch's query (./visibilityCloses.ts) from an index, by
 * the store's name in GetClusterInfo. A store that scans the namespace for it costs, per call, in proportion to the
 * executions retained: the dev server's SQLite took 62 ms of Temporal CPU for one id and 91 ms for 256 with 45,000
 * executions retained, against 1–5 ms on a fresh one, while PostgreSQL answered from its by_workflow_id index at the
 * same cost with 50,000 and 1,000,000 (docs/design.md, "Fair turns for tenants"). Only stores measured (or built) to
 * answer from an index get the lone watch; any other, and a store the server does not name, keep the long polls.
 */
import type { Client } from '@temporalio/client';
import { SERVER_DEADLINE_MS } from './closedRuns';
import { GRPC, GRPC_NAME, grpcStatus } from './grpcStatus';

/** What the server said of its visibility store: its name, and whether it answers the query from an index. */
export interface StoreVerdict {
  indexed: boolean;
  store: string;
  /** The answer cannot change while the process runs (GetClusterInfo refused): not asked again. */
  final?: boolean;
}

/** Stores that answer `WorkflowId IN (…) AND ExecutionStatus IN (…)` from an index: measured, or built for it. */
const INDEXED = /^(postgres|elasticsearch)/i;
/** Refusals that hold for the process (the credential may not read cluster information, or no server offers it). */
const REFUSED = new Set<number>([GRPC.PERMISSION_DENIED, GRPC.UNIMPLEMENTED]);

/** Whether a store, as GetClusterInfo names it, answers from an index; with two (dual visibility) reads use the first. */
export function answersFromIndex(store: string): boolean {
  return INDEXED.test(store.split(',')[0]!.trim());
}

/**
 * Asks the server which visibility store it runs. A refusal (a namespace-scoped credential may not read cluster
 * information) makes the store unknown for the life of the process, so not indexed, and it is not asked again: each
 * refusal counts in the server's errors. Any other failure rejects: a failed call, asked again later.
 */
export function visibilityStore(client: Client): () => Promise<StoreVerdict> {
  let refused: string | undefined;
  return async () => {
    if (refused !== undefined) return { indexed: false, store: refused, final: true };
    try {
      const info = await client.connection.withDeadline(Date.now() + SERVER_DEADLINE_MS, () =>
        client.workflowService.getClusterInfo({}),
      );
      const store = info.visibilityStore ?? '';
      return { indexed: answersFromIndex(store), store: store || 'unnamed' };
    } catch (err) {
      const code = grpcStatus(err)?.code;
      if (code === undefined || !REFUSED.has(code)) throw err;
      refused = `unknown (GetClusterInfo: ${GRPC_NAME[code]})`;
      return { indexed: false, store: refused, final: true };
    }
  };
}
