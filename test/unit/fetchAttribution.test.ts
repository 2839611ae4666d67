/**
 * The Fetch response walker that names the batches a failed fetch could not decode (kafka/fetchAttribution.ts):
 * a v11 response of one topic with a good gzip batch on partition 0 and a corrupt one after a good one on 1.
 */
import zlib from 'node:zlib';
import { locateUndecodable } from '../../src/kafka/fetchAttribution';

/** A record batch (magic 2) of the given codec attribute and body; only the fields the walker reads matter. */
function batch(baseOffset: bigint, attributes: number, body: Buffer): Buffer {
  const header = Buffer.alloc(61);
  header.writeBigInt64BE(baseOffset, 0);
  header.writeInt32BE(49 + body.length, 8);
  header.writeInt8(2, 16);
  header.writeInt16BE(attributes, 21);
  header.writeInt32BE(1, 57);
  return Buffer.concat([header, body]);
}

function partition(id: number, records: Buffer): Buffer {
  const head = Buffer.alloc(4 + 2 + 8 * 3 + 4 + 4 + 4);
  head.writeInt32BE(id, 0);
  head.writeInt32BE(-1, 30); // no aborted transactions
  head.writeInt32BE(-1, 34); // preferred read replica
  head.writeInt32BE(records.length, 38);
  return Buffer.concat([head, records]);
}

test('names the partition and base offset of the first batch that cannot be decoded, and no other', async () => {
  const good = zlib.gzipSync(Buffer.from('records'));
  const topic = Buffer.from('poimen.t.dispatch');
  const head = Buffer.alloc(10 + 4 + 2);
  head.writeInt32BE(1, 10);
  head.writeInt16BE(topic.length, 14);
  const count = Buffer.alloc(4);
  count.writeInt32BE(2);
  const response = Buffer.concat([
    head,
    topic,
    count,
    partition(0, Buffer.concat([batch(0n, 1, good), batch(1n, 0, Buffer.from('plain'))])),
    partition(1, Buffer.concat([batch(7n, 1, good), batch(8n, 1, Buffer.from('not gzip'))])),
  ]);
  expect(await locateUndecodable(response, 11)).toEqual([
    { topic: 'poimen.t.dispatch', partition: 1, offset: '8', codec: 'gzip', reason: expect.any(String) },
  ]);
});
