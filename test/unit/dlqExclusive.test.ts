/**
 * One DLQ command at a time per tenant (src/ops/dlqExclusive.ts): a command refuses at once when the tenant's
 * group has a live member, and every join is checked before a record is handed over (all partitions held, the
 * recorded progress unchanged). Kafka's admin is a stub: the group's members and its commits.
 */
import { SHARED_DLQ_REPLAY_GROUP, dlqReplayGroup } from '../../src/contract';
import { BusyError, UnreachableError } from '../../src/errors';
import type { KafkaAdmin } from '../../src/kafka/port';
import {
  DLQ_JOIN_TIMEOUT_MS,
  DLQ_SESSION_TIMEOUT_MS,
  exclusiveDlqRead,
  refuseIfBusy,
} from '../../src/ops/dlqExclusive';
import { PartitionProgress } from '../../src/kafka/dlqProgress';

const TENANT = 'acme';
const TOPIC = 'poimen.acme.dispatch.dlq';

type Commit = { partition: number; offset: string; metadata: string | null };

function stubAdmin(opts: {
  members?: { clientId: string; clientHost: string; memberId: string }[];
  commits?: Record<string, Commit[]>;
}) {
  const described: string[][] = [];
  const admin = {
    describeGroups: async (groupIds: string[]) => {
      described.push(groupIds);
      return { groups: [{ groupId: groupIds[0], members: opts.members ?? [] }] };
    },
    fetchOffsets: async ({ groupId }: { groupId: string }) => [
      { topic: TOPIC, partitions: opts.commits?.[groupId] ?? [] },
    ],
  };
  return { admin: admin as unknown as KafkaAdmin, described };
}

describe('refuseIfBusy', () => {
  it('lets a command start when the tenant’s group has no member, asking about that group only', async () => {
    const { admin, described } = stubAdmin({});
    await expect(refuseIfBusy(admin, TENANT)).resolves.toBeUndefined();
    expect(described).toEqual([[dlqReplayGroup(TENANT)]]);
  });

  it('refuses a command while another holds the group, naming the member and the longest wait', async () => {
    const { admin } = stubAdmin({
      members: [
        { clientId: 'poimen-relay', clientHost: '/10.0.0.7', memberId: 'm-1' },
        { clientId: 'other', clientHost: 'host-b', memberId: 'm-2' },
      ],
    });
    const refusal = refuseIfBusy(admin, TENANT);
    await expect(refusal).rejects.toThrow(BusyError);
    await expect(refusal).rejects.toThrow(
      `another dlq command is working on tenant acme's dead letters ` +
        `(member poimen-relay@10.0.0.7 m-1, other@host-b m-2); retry when it ends, ` +
        `or after ${DLQ_SESSION_TIMEOUT_MS / 1000} s if it was killed`,
    );
  });
});

describe('exclusiveDlqRead', () => {
  const marks = new Map([
    [0, { low: 0n, high: 10n }],
    [1, { low: 0n, high: 10n }],
  ]);
  const progressAt = (offset: bigint, metadata = 'v1:') =>
    PartitionProgress.fromCommit(offset.toString(), metadata, 0n);
  const own = (p0: Commit, p1: Commit) => ({ [dlqReplayGroup(TENANT)]: [p0, p1] });

  it('states its session and join timeouts and the error of a join that did not complete', () => {
    const { admin } = stubAdmin({});
    const x = exclusiveDlqRead(admin, TENANT, TOPIC, marks, new Map());
    expect(x.sessionTimeoutMs).toBe(DLQ_SESSION_TIMEOUT_MS);
    expect(x.joinTimeoutMs).toBe(DLQ_JOIN_TIMEOUT_MS);
    const err = x.joinTimedOut();
    expect(err).toBeInstanceOf(UnreachableError);
    expect(err.message).toBe(
      `Kafka did not assign ${TOPIC} to this command within ${DLQ_JOIN_TIMEOUT_MS / 1000} s ` +
        `(group ${dlqReplayGroup(TENANT)}); nothing more was published`,
    );
  });

  it('goes on when it holds every partition and the recorded progress is its own', async () => {
    const { admin } = stubAdmin({
      commits: own(
        { partition: 0, offset: '3', metadata: 'v1:2.1' },
        { partition: 1, offset: '5', metadata: 'v1:' },
      ),
    });
    const mine = new Map([
      [0, progressAt(3n, 'v1:2.1')],
      [1, progressAt(5n)],
    ]);
    const x = exclusiveDlqRead(admin, TENANT, TOPIC, marks, mine);
    await expect(x.onJoin([1, 0])).resolves.toBeUndefined();
  });

  it('stops when Kafka assigned it only some of the partitions', async () => {
    const { admin } = stubAdmin({});
    const x = exclusiveDlqRead(admin, TENANT, TOPIC, marks, new Map());
    const join = x.onJoin([1]);
    await expect(join).rejects.toThrow(BusyError);
    await expect(join).rejects.toThrow(
      `another dlq command joined tenant acme's dead letters (group ${dlqReplayGroup(TENANT)}): ` +
        `Kafka assigned this run partitions [1] of [0, 1]; this run stopped without publishing more ` +
        `(what it handled is recorded); retry when the other ends`,
    );
  });

  it('lists the partitions in order, whatever order the marks were read in', async () => {
    const { admin } = stubAdmin({});
    const unordered = new Map([
      [2, { low: 0n, high: 1n }],
      [0, { low: 0n, high: 1n }],
      [1, { low: 0n, high: 1n }],
    ]);
    const x = exclusiveDlqRead(admin, TENANT, TOPIC, unordered, new Map());
    await expect(x.onJoin([])).rejects.toThrow('Kafka assigned this run partitions [] of [0, 1, 2]');
  });

  it('stops when another run moved a partition’s committed offset', async () => {
    const { admin } = stubAdmin({
      commits: own(
        { partition: 0, offset: '4', metadata: 'v1:' },
        { partition: 1, offset: '5', metadata: 'v1:' },
      ),
    });
    const mine = new Map([
      [0, progressAt(3n)],
      [1, progressAt(5n)],
    ]);
    const x = exclusiveDlqRead(admin, TENANT, TOPIC, marks, mine);
    await expect(x.onJoin([0, 1])).rejects.toThrow("partition 0's recorded progress changed under this run");
  });

  it('stops when another run recorded other handled records past the same offset', async () => {
    const { admin } = stubAdmin({
      commits: own(
        { partition: 0, offset: '3', metadata: 'v1:' },
        { partition: 1, offset: '5', metadata: 'v1:1.1' },
      ),
    });
    const mine = new Map([
      [0, progressAt(3n)],
      [1, progressAt(5n)],
    ]);
    const x = exclusiveDlqRead(admin, TENANT, TOPIC, marks, mine);
    await expect(x.onJoin([0, 1])).rejects.toThrow("partition 1's recorded progress changed under this run");
  });

  it('reads a partition’s progress from the group all tenants once shared while the tenant’s own has none', async () => {
    const { admin } = stubAdmin({
      commits: {
        [dlqReplayGroup(TENANT)]: [{ partition: 0, offset: '3', metadata: 'v1:' }],
        [SHARED_DLQ_REPLAY_GROUP]: [
          { partition: 0, offset: '1', metadata: 'v1:' },
          { partition: 1, offset: '2', metadata: 'v1:' },
        ],
      },
    });
    const mine = new Map([
      [0, progressAt(3n)],
      [1, progressAt(2n)],
    ]);
    const x = exclusiveDlqRead(admin, TENANT, TOPIC, marks, mine);
    await expect(x.onJoin([0, 1])).resolves.toBeUndefined();
  });
});
