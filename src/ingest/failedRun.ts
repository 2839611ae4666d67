/**
 * Whether a record may run its dispatch again after the dispatch's newest run closed without completing (it
 * failed and was dead-lettered, or was terminated or timed out). Only a record newer than the one that started that
 * run may: a replay (`dlq replay` publishes the dead letter's message anew), or a producer's new record with the
 * same dispatch key. A redelivery of the record that started the run (a rebalance or a crash before its commit),
 * or of one before it on the same partition, has been handled once and is absorbed: running it again would call
 * the runs API and dead-letter the dispatch a second time.
 *
 * The record that started a run is the start's memo (`source_topic`, `partition`, `offset`, `record_timestamp`:
 * startDispatch.ts). A run without that memo cannot tell, and may run again.
 */
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import type { DlqSource } from '../contract';

/** True when `record` is the record that started the run described by `memo`, or one before it. */
export function handledBy(memo: Record<string, unknown> | undefined, record: DlqSource): boolean {
  const topic = memo?.['source_topic'];
  const partition = memo?.['partition'];
  const offset = memo?.['offset'];
  const timestamp = memo?.['record_timestamp'];
  if (typeof offset !== 'string' || typeof timestamp !== 'string' || !/^\d+$/.test(offset)) return false;
  if (topic !== record.topic || partition !== record.partition) return false;
  // The timestamp tells a record of a topic made anew (its offsets start again) from the one that ran.
  if (offset === record.offset) return timestamp === record.timestamp;
  return BigInt(record.offset) < BigInt(offset) && Number(record.timestamp) <= Number(timestamp);
}

/**
 * After a start refused because the dispatch's newest run is closed: whether `record` runs it again. A completed
 * dispatch never does. A run that is open again by now (another record's start meanwhile) is joined by a start.
 */
export async function runsAgain(
  client: Client,
  workflowId: string,
  record: DlqSource,
  deadlineMs: number,
): Promise<boolean> {
  try {
    const run = await client.connection.withDeadline(deadlineMs, () =>
      client.workflow.getHandle(workflowId).describe(),
    );
    if (run.status.name === 'COMPLETED') return false;
    if (run.status.name === 'RUNNING') return true;
    return !handledBy(run.memo, record);
  } catch (err) {
    // Gone meanwhile (retention): a start makes a new one, as for a dispatch never seen.
    if (err instanceof WorkflowNotFoundError) return true;
    throw err;
  }
}
