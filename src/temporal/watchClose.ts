/**
 * Waits for one execution to close, however it closes (completed, failed, timed out, terminated, cancelled,
 * continued as new, or gone past retention); rejects when Temporal could not say (unreachable, refused), or when
 * `signal` aborts. The ingester's admission per tenant counts a dispatch open until this returns
 * (ingest/admission.ts).
 *
 * Long polls for the close event one call at a time rather than through WorkflowHandle.result(): each call gets
 * its own abort link, removed when the call ends, whereas a process-long signal handed to result() collects one
 * listener per renewal of every watch, for as long as the process lives.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { GRPC, grpcStatus } from './grpcStatus';

const CLOSE_EVENT = temporal.api.enums.v1.HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT;

export async function watchClose(
  client: Client,
  workflowId: string,
  runId: string,
  signal: AbortSignal,
): Promise<boolean> {
  let nextPageToken: Uint8Array | undefined;
  for (;;) {
    signal.throwIfAborted();
    const call = new AbortController();
    const cancel = () => call.abort();
    signal.addEventListener('abort', cancel, { once: true });
    try {
      const res = await client.connection.withAbortSignal(call.signal, () =>
        client.workflowService.getWorkflowExecutionHistory({
          namespace: client.options.namespace,
          execution: { workflowId, runId },
          skipArchival: true,
          waitNewEvent: true,
          historyEventFilterType: CLOSE_EVENT,
          ...(nextPageToken ? { nextPageToken } : {}),
        }),
      );
      // Only the close event passes the filter: any event means the execution is over.
      if ((res.history?.events?.length ?? 0) > 0) return true;
      // The long poll timed out with the execution still open: ask again from where it left off.
      nextPageToken = res.nextPageToken?.length ? res.nextPageToken : undefined;
    } catch (err) {
      // Deleted past retention: closed long ago as far as admission is concerned.
      if (grpcStatus(err)?.code === GRPC.NOT_FOUND) return false;
      throw err;
    } finally {
      signal.removeEventListener('abort', cancel);
    }
  }
}
