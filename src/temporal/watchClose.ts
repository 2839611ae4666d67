/**
 * Waits for one execution to close, however it closes (completed, failed, timed out, terminated, cancelled, or
 * gone past retention); rejects only when Temporal could not say (unreachable), or when `signal` aborts. The
 * ingester's admission per tenant counts a dispatch open until this returns (ingest/admission.ts).
 */
import {
  type Client,
  WorkflowContinuedAsNewError,
  WorkflowFailedError,
  WorkflowNotFoundError,
} from '@temporalio/client';

export async function watchClose(
  client: Client,
  workflowId: string,
  runId: string,
  signal: AbortSignal,
): Promise<void> {
  try {
    // One long poll for the close event, renewed by the SDK until the execution closes.
    await client.connection.withAbortSignal(signal, () =>
      client.workflow.getHandle(workflowId, runId, { followRuns: false }).result(),
    );
  } catch (err) {
    const closed =
      err instanceof WorkflowFailedError ||
      err instanceof WorkflowContinuedAsNewError ||
      err instanceof WorkflowNotFoundError;
    if (closed) return;
    throw err;
  }
}
