/**
 * The DLQ replay's record of what it handled: committed offset = first record not yet handled, metadata = the
 * handled runs after it. What the backlog gauges and the next replay read back must be what was handled.
 */
import { MAX_PROGRESS_METADATA_CHARS, PartitionProgress } from '../../src/kafka/dlqProgress';

const fresh = (low = 0n) => PartitionProgress.fromCommit(undefined, undefined, low);
const reread = (p: PartitionProgress, low = 0n) =>
  PartitionProgress.fromCommit(p.position.toString(), p.metadata(), low);

test('handling in order moves the committed offset; nothing else is recorded', () => {
  const p = fresh();
  for (const o of [0n, 1n, 2n]) p.mark(o);
  expect(p.position).toBe(3n);
  expect(p.metadata()).toBe('v1:');
  expect(p.pending(0n, 5n)).toBe(2n);
  expect(p.firstPending(0n, 5n)).toBe(3n);
});

test('a record passed over holds the offset; the handled ones after it survive a commit and a re-read', () => {
  const p = fresh();
  for (const o of [0n, 2n, 3n, 5n, 40n]) p.mark(o);
  expect(p.position).toBe(1n);
  const back = reread(p);
  expect(back.position).toBe(1n);
  const handled = (q: PartitionProgress) => [...Array(45).keys()].filter((i) => q.isHandled(BigInt(i)));
  expect(handled(back)).toEqual([0, 2, 3, 5, 40]);
  expect(back.pending(0n, 45n)).toBe(40n);
  expect(back.firstPending(0n, 45n)).toBe(1n);
  // The gap filled: the offset runs on through every handled record after it.
  back.mark(1n);
  expect(back.position).toBe(4n);
  back.mark(4n);
  expect(back.position).toBe(6n);
  expect(back.firstPending(0n, 45n)).toBe(6n);
});

test('marking out of order merges runs, both sides', () => {
  const p = fresh();
  for (const o of [10n, 12n, 11n, 9n, 13n]) p.mark(o);
  expect(reread(p).pending(0n, 20n)).toBe(15n);
  expect(p.metadata()).toBe('v1:9.5');
});

test('records gone by retention are not pending; runs below the log start are dropped', () => {
  const p = fresh();
  for (const o of [1n, 2n, 6n]) p.mark(o);
  const after = reread(p, 3n);
  expect(after.position).toBe(3n);
  expect(after.pending(3n, 8n)).toBe(4n);
  const past = reread(p, 6n);
  expect(past.position).toBe(7n);
  expect(past.firstPending(6n, 8n)).toBe(7n);
});

test('metadata from another writer (an older relay, a reset) counts everything past the offset as pending', () => {
  for (const junk of [null, '', 'hello', 'v1:0.1', 'v1:1.0', 'v1:1.2,x']) {
    const p = PartitionProgress.fromCommit('4', junk, 0n);
    expect(p.position).toBe(4n);
    expect(p.pending(0n, 10n)).toBe(6n);
  }
  expect(PartitionProgress.fromCommit('-1', 'v1:1.1', 2n).position).toBe(2n);
});

test('the metadata stays under what Kafka stores: marking that would overflow it is refused', () => {
  const p = fresh();
  let o = 1n;
  while (p.canMark(o)) {
    p.mark(o);
    o += 2n;
  }
  expect(p.metadata().length).toBeLessThanOrEqual(MAX_PROGRESS_METADATA_CHARS);
  // Alternating handled and pending records, the worst case: each gap costs 4 characters ('1.1,'), so about a
  // thousand separate gaps fit (docs/operations.md states this bound).
  const gaps = Number(o / 2n);
  expect(gaps).toBe(Math.floor((MAX_PROGRESS_METADATA_CHARS - 'v1:'.length + 1) / '1.1,'.length));
  expect(gaps).toBeGreaterThanOrEqual(999);
  // Extending an existing run costs nothing: still allowed.
  expect(p.canMark(o - 1n)).toBe(true);
  expect(reread(p).pending(0n, o)).toBe(o - BigInt(p.metadata().split(',').length));
});

test('an empty committed offset is no commit: the metadata beside it is not read', () => {
  const p = PartitionProgress.fromCommit('', 'v1:1.1', 0n);
  expect(p.position).toBe(0n);
  expect(p.pending(0n, 5n)).toBe(5n);
});

test('metadata with an empty run is another writer’s: nothing past the offset is kept, nor written back', () => {
  const p = PartitionProgress.fromCommit('4', 'v1:1.0', 0n);
  expect(p.metadata()).toBe('v1:');
});

test('the first pending record is past a handled run that starts where the range does', () => {
  const p = fresh();
  p.mark(2n);
  p.mark(3n);
  expect(p.firstPending(2n, 10n)).toBe(4n);
  expect(p.firstPending(0n, 10n)).toBe(0n);
});
