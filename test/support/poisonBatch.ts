/**
 * Record batches that the broker accepts and the relay cannot decode, for the isolation tests: a corrupt body,
 * and a decompression bomb.
 *
 * A gzip body followed by bytes that are not another gzip member: Kafka's broker, like the JDK's gzip stream it
 * is modelled on, ignores what follows a member ("ignore any malformed, do nothing"), so the produce succeeds
 * and Java consumers read the records; Node's zlib refuses the body ("incorrect header check"). The batch
 * stands for any batch a consumer cannot decode (a codec bug, a corrupt body, an unsupported variant).
 */
import zlib from 'node:zlib';
import { CompressionCodecs, CompressionTypes, type Producer } from 'kafkajs';

const TRAILER = Buffer.from('not another gzip member');

/** Sends the messages as one gzip batch with trailing bytes to the partition; returns the batch's base offset. */
export async function sendUndecodableBatch(
  producer: Producer,
  topic: string,
  partition: number,
  messages: { key: string; value: string }[],
): Promise<string> {
  // kafkajs keeps codecs in one module-level table: swap gzip for this one send, then put it back.
  const original = CompressionCodecs[CompressionTypes.GZIP];
  CompressionCodecs[CompressionTypes.GZIP] = () => ({
    compress: (encoder: { buffer: Buffer }) =>
      Promise.resolve(Buffer.concat([zlib.gzipSync(encoder.buffer), TRAILER])),
    decompress: (buffer: Buffer) => Promise.resolve(zlib.unzipSync(buffer)),
  });
  try {
    const [meta] = await producer.send({
      topic,
      acks: -1,
      compression: CompressionTypes.GZIP,
      messages: messages.map((m) => ({ ...m, partition })),
    });
    if (!meta?.baseOffset) throw new Error(`no base offset for the batch sent to ${topic}[${partition}]`);
    return meta.baseOffset;
  } finally {
    CompressionCodecs[CompressionTypes.GZIP] = original;
  }
}

/** Kafka's record varint: zigzag-encoded, 7 bits a byte. */
function varint(n: number): Buffer {
  let z = n >= 0 ? n * 2 : -n * 2 - 1;
  const bytes: number[] = [];
  while (z >= 0x80) {
    bytes.push((z % 0x80) | 0x80);
    z = Math.floor(z / 0x80);
  }
  bytes.push(z);
  return Buffer.from(bytes);
}

/** A zstd block header: size, type (0 raw, 1 RLE), last. */
function zstdBlock(size: number, type: 0 | 1, last: boolean): Buffer {
  const header = Buffer.alloc(3);
  header.writeUIntLE(size * 8 + type * 2 + (last ? 1 : 0), 0, 3);
  return header;
}

/**
 * A decompression bomb the broker accepts: one zstd frame of a few KiB holding one valid record whose value is
 * `valueBytes` zeros (RLE blocks of 128 KiB), sent as a one-record zstd batch; returns the batch's offset.
 */
export async function sendDecompressionBomb(
  producer: Producer,
  topic: string,
  partition: number,
  valueBytes: number,
): Promise<string> {
  const RLE = 128 * 1024;
  if (valueBytes % RLE !== 0) throw new Error(`valueBytes must be a multiple of ${RLE}`);
  // attributes, timestamp delta, offset delta, key length -1 (no key), value length; then the value; then 0 headers.
  const head = Buffer.concat([Buffer.from([0, 0, 0]), varint(-1), varint(valueBytes)]);
  const record = Buffer.concat([varint(head.length + valueBytes + 1), head]);
  const blocks: Buffer[] = [zstdBlock(record.length, 0, false), record];
  for (let i = 0; i < valueBytes / RLE; i++) blocks.push(zstdBlock(RLE, 1, false), Buffer.from([0]));
  blocks.push(zstdBlock(1, 0, true), Buffer.from([0]));
  const body = Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58]), ...blocks]);
  const original = CompressionCodecs[CompressionTypes.ZSTD];
  CompressionCodecs[CompressionTypes.ZSTD] = () => ({
    compress: () => Promise.resolve(body),
    decompress: () => Promise.reject(new Error('not for reading')),
  });
  try {
    const [meta] = await producer.send({
      topic,
      acks: -1,
      compression: CompressionTypes.ZSTD,
      messages: [{ partition, value: 'replaced by the bomb' }],
    });
    if (!meta?.baseOffset) throw new Error(`no base offset for the bomb sent to ${topic}[${partition}]`);
    return meta.baseOffset;
  } finally {
    CompressionCodecs[CompressionTypes.ZSTD] = original;
  }
}
