/**
 * One DLQ command at a time per tenant (docs/design.md, "DLQ commands"): `dlq replay`, `discard` and `purge-tests`
 * of a tenant work through its own group (`poimen-relay-dlq.<tenant>`), so runs for different tenants never meet,
 * and a run for a tenant whose group has a live member refuses at once, doing nothing. A member that was killed
 * stays live until its session times out (DLQ_SESSION_TIMEOUT_MS, kept short for these commands): that is the
 * longest a killed run blocks the next one. Should a second run still slip in (both looked before either joined),
 * every join is checked before a record is handed over: this run must hold all of the topic's partitions, and the
 * group's recorded progress must be what this run believes it is; otherwise it stops without publishing more.
 */
import { dlqReplayGroup } from '../contract';
import { BusyError, UnreachableError } from '../errors';
import { whenCoordinatorReady } from '../kafka/coordinator';
import type { ExclusiveRead } from '../kafka/readRange';
import type { KafkaAdmin } from '../kafka/port';
import { type PartitionProgress, loadProgress } from '../kafka/dlqProgress';

/** The session timeout of a DLQ command's group member: how long a killed run blocks the next one, at most. */
export const DLQ_SESSION_TIMEOUT_MS = 10_000;
/** The longest a DLQ command waits for Kafka to assign it the tenant's DLQ topic. */
export const DLQ_JOIN_TIMEOUT_MS = 30_000;

const seconds = (ms: number) => Math.ceil(ms / 1000);

/** Throws BusyError when the tenant's DLQ group has a live member (another DLQ command, or one killed lately). */
export async function refuseIfBusy(admin: KafkaAdmin, tenant: string): Promise<void> {
  const { groups } = await whenCoordinatorReady(() => admin.describeGroups([dlqReplayGroup(tenant)]));
  const members = groups[0]?.members ?? [];
  if (members.length === 0) return;
  const who = members.map((m) => `${m.clientId}@${m.clientHost.replace(/^\//, '')} ${m.memberId}`).join(', ');
  throw new BusyError(
    `another dlq command is working on tenant ${tenant}'s dead letters (member ${who}); retry when it ends, ` +
      `or after ${seconds(DLQ_SESSION_TIMEOUT_MS)} s if it was killed`,
  );
}

/** The checks of every join of a replay or discard of `dlqTopic`; `progress` is the run's own, as it goes. */
export function exclusiveDlqRead(
  admin: KafkaAdmin,
  tenant: string,
  dlqTopic: string,
  marks: Map<number, { low: bigint; high: bigint }>,
  progress: Map<number, PartitionProgress>,
): ExclusiveRead {
  const group = dlqReplayGroup(tenant);
  const stopped = (why: string) =>
    new BusyError(
      `another dlq command joined tenant ${tenant}'s dead letters (group ${group}): ${why}; this run stopped ` +
        `without publishing more (what it handled is recorded); retry when the other ends`,
    );
  return {
    sessionTimeoutMs: DLQ_SESSION_TIMEOUT_MS,
    joinTimeoutMs: DLQ_JOIN_TIMEOUT_MS,
    joinTimedOut: () =>
      new UnreachableError(
        `Kafka did not assign ${dlqTopic} to this command within ${seconds(DLQ_JOIN_TIMEOUT_MS)} s ` +
          `(group ${group}); nothing more was published`,
      ),
    onJoin: async (assigned) => {
      const all = [...marks.keys()].sort((a, b) => a - b);
      if (!all.every((p) => assigned.includes(p)))
        throw stopped(`Kafka assigned this run partitions [${assigned.join(', ')}] of [${all.join(', ')}]`);
      const recorded = await loadProgress(admin, dlqTopic, marks);
      for (const [partition, mine] of progress) {
        const theirs = recorded.get(partition)!;
        if (theirs.position !== mine.position || theirs.metadata() !== mine.metadata())
          throw stopped(`partition ${partition}'s recorded progress changed under this run`);
      }
    },
  };
}
