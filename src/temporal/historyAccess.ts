/**
 * Whether this process's Temporal credentials may read workflow history, which the ingester's admission needs:
 * it learns that a dispatch closed by a long poll on the execution's history (./watchClose.ts). Refused, every
 * watch would be asked again forever and its slot stay held, so once a tenant's share was started its records
 * would wait in Kafka for good while the process looked healthy. Asked once at start instead, with one line.
 */
import type { Connection } from '@temporalio/client';
import { INGEST } from '../config/vars/ingest';
import { ConfigError } from '../errors';
import { GRPC, GRPC_NAME, grpcStatus } from './grpcStatus';

/** A workflow id no dispatch has (workflow ids of dispatches start `dispatch:`): the answer is NOT_FOUND. */
const PROBE_WORKFLOW_ID = 'poimen-relay:history-access-probe';

/**
 * Throws a ConfigError naming POIMEN_INGEST_MAX_OPEN when Temporal refuses the history read; any other answer
 * (NOT_FOUND, as expected, or an outage the watches will ride out) is left alone.
 */
export async function requireHistoryAccess(connection: Connection, namespace: string): Promise<void> {
  try {
    await connection.workflowService.getWorkflowExecutionHistory({
      namespace,
      execution: { workflowId: PROBE_WORKFLOW_ID },
      maximumPageSize: 1,
    });
  } catch (err) {
    const status = grpcStatus(err);
    if (status?.code !== GRPC.PERMISSION_DENIED && status?.code !== GRPC.UNAUTHENTICATED) return;
    throw new ConfigError(
      INGEST.POIMEN_INGEST_MAX_OPEN.name,
      `needs the ingester's Temporal credentials to read workflow history on namespace ${namespace} to see dispatches close, and Temporal refused it (${GRPC_NAME[status.code]}: ${status.details.split('\n')[0]}); grant GetWorkflowExecutionHistory, or set ${INGEST.POIMEN_INGEST_MAX_OPEN.name}=0 and leave ${INGEST.POIMEN_INGEST_TENANT_MAX_OPEN.name} unset to turn admission off`,
    );
  }
}
