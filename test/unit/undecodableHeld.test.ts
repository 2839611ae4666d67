/**
 * A partition held at an undecodable batch stays held and is not probed again: a later crash (another partition's
 * corrupt batch) probes only the partitions not yet held, so the held one is neither read again nor reported twice.
 * The probe (kafka/decodeProbe.ts) and the group's positions are stubs here; it_compression runs them on Kafka.
 */
import { findUndecodableBatches, type ProbeTarget } from '../../src/kafka/decodeProbe';
import { UndecodablePartitions } from '../../src/ingest/undecodable';

jest.mock('../../src/kafka/decodeProbe', () => ({ findUndecodableBatches: jest.fn() }));
jest.mock('../../src/kafka/offsets', () => ({
  groupPositions: async (_admin: unknown, _group: string, topics: string[]) =>
    topics.flatMap((topic) => [0, 1].map((partition) => ({ topic, partition, committed: 5n, low: 0n }))),
}));
const probe = findUndecodableBatches as jest.MockedFunction<typeof findUndecodableBatches>;

test('a held partition is not probed again: a later find probes only the others and holds nothing twice', async () => {
  const probed: ProbeTarget[][] = [];
  probe.mockImplementation(async (_kafka, targets) => {
    probed.push(targets);
    return targets
      .filter((t) => t.partition === 1)
      .map((t) => ({ ...t, codec: 'zstd' as const, reason: 'corrupt frame' }));
  });
  const set = jest.fn();
  const error = jest.fn();
  // Each find asks for the positions on an admin of its own, and lets it go.
  const admins: { connected: number; disconnected: number }[] = [];
  const kafka = {
    admin: () => {
      const a = { connected: 0, disconnected: 0 };
      admins.push(a);
      return { connect: async () => void a.connected++, disconnect: async () => void a.disconnected++ };
    },
  };
  const held = new UndecodablePartitions(
    kafka as never,
    'poimen-relay',
    { undecodablePartitions: { set } } as never,
    { error } as never,
  );
  const topic = 'poimen.acme.dispatch';
  await expect(held.find([topic])).resolves.toBe(1);
  await expect(held.find([topic])).resolves.toBe(0);
  expect(probed).toEqual([
    [
      { topic, partition: 0, offset: '5' },
      { topic, partition: 1, offset: '5' },
    ],
    [{ topic, partition: 0, offset: '5' }],
  ]);
  expect(admins).toEqual([
    { connected: 1, disconnected: 1 },
    { connected: 1, disconnected: 1 },
  ]);
  expect(set).toHaveBeenCalledTimes(1);
  expect(error).toHaveBeenCalledTimes(1);
  expect(held.among({ [topic]: [0, 1] })).toEqual([{ topic, partitions: [1] }]);
});
