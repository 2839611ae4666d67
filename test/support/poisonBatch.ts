/**
 * A record batch that the broker accepts and the relay cannot decode, for the isolation tests.
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
