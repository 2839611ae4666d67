/**
 * Kafka's compression codecs for kafkajs, which implements only gzip and crashes its consumer on any other
 * (`KafkaJSNotImplemented: Snappy compression not implemented`). Tenants' producers are Java services and
 * librdkafka clients, commonly set to snappy, lz4 or zstd, so every codec a record batch may carry is registered.
 *
 * The implementations are prebuilt N-API modules installed from npm alone (one optional package per platform,
 * no compiler, no download at install time), and their work runs on libuv's thread pool, off the event loop:
 * - snappy: `snappy` (napi-rs, Google's algorithm in Rust). Two wire forms occur: the Java client writes the
 *   xerial framing (an 8-byte magic, two int32 versions, then chunks of [int32 length][raw block]); librdkafka
 *   writes one raw block. Both are read; a raw block is written (every client reads it).
 * - lz4: `lz4-napi` (napi-rs over lz4_flex). Kafka's lz4 is the LZ4 *frame* format (magic 04 22 4D 18), with
 *   independent 64 KiB blocks; record batches of magic 2 carry a correct header checksum.
 * - zstd: `@mongodb-js/zstd` 1.x (napi-rs over the zstd crate; the driver MongoDB ships), standard frames.
 * - gzip: Node's zlib, as kafkajs does, registered here too so that every codec fails the same way.
 *
 * kafkajs keeps codecs in one module-level table, so registering once per process serves every client.
 *
 * Decoding is bounded: a body that would decode to more than the process's cap (`decodedBatchMaxBytes`, derived
 * from the fetch and record bounds in config/env.ts) is refused as undecodable before its output exists — gzip
 * stops at the cap (zlib's `maxOutputLength`), the other codecs are measured from their framing first
 * (kafka/decodedSize.ts). A decompression bomb is thus held like any batch the relay cannot decode.
 */
import { promisify } from 'node:util';
import buffer from 'node:buffer';
import zlib from 'node:zlib';
import { CompressionCodecs, CompressionTypes } from 'kafkajs';
import { compressFrame, decompressFrame } from 'lz4-napi';
import { compress as zstdCompress, decompress as zstdDecompress } from '@mongodb-js/zstd';
import { compress as snappyCompress, uncompress as snappyUncompress } from 'snappy';
import { lz4DecodedBound, snappyBlockSize, zstdDecodedBound } from './decodedSize';

export type CodecName = 'gzip' | 'snappy' | 'lz4' | 'zstd';

/** What kafkajs calls: compress gets its encoder (the records' bytes in `.buffer`), decompress the batch body. */
export interface KafkaCodec {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>;
  decompress(buffer: Buffer): Promise<Buffer>;
}

/**
 * A record batch whose body its codec could not decode. Deterministic: fetching the same bytes again fails
 * again, so it is marked not retriable (kafkajs would otherwise re-fetch it a dozen times before crashing).
 * The codec's own error is kept as text, not as `cause`: kafkajs wraps a non-retriable error with
 * `cause: e.cause || e`, and this error, not the library's, is what a crash handler must find in the chain.
 */
export class KafkaCodecError extends Error {
  override readonly name = 'KafkaCodecError';
  readonly retriable = false;
  /** The batches of the failed fetch that cannot be decoded, by partition (kafka/fetchAttribution.ts). */
  located?: LocatedBatch[];
  constructor(
    readonly codec: CodecName,
    readonly compressedBytes: number,
    readonly reason: string,
  ) {
    super(`could not decode a ${codec}-compressed record batch (${compressedBytes} bytes): ${reason}`);
  }
}

/** Where a record batch that cannot be decoded starts, and why it cannot be. */
export interface LocatedBatch {
  topic: string;
  partition: number;
  /** The batch's base offset. */
  offset: string;
  codec: CodecName;
  reason: string;
}

/** The KafkaCodecError behind an error kafkajs reports (it wraps errors in `cause` chains), if any. */
export function codecErrorIn(err: unknown): KafkaCodecError | undefined {
  const seen = new Set<unknown>();
  for (let e = err; e && typeof e === 'object' && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    if (e instanceof KafkaCodecError) return e;
  }
  return undefined;
}

const gzip = promisify(zlib.gzip);
const unzip = promisify(zlib.unzip);

// "\x82SNAPPY\0", then int32 version and int32 minimum compatible version (snappy-java's SnappyCodec header).
const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_BYTES = 16;

async function snappyBlock(block: Buffer): Promise<Buffer> {
  return (await snappyUncompress(block, { asBuffer: true })) as Buffer;
}

/** A body that would decode past the cap: refused before its output exists. */
class DecodedTooLarge extends Error {
  constructor(bound: number, maxBytes: number) {
    super(`decodes to more than ${maxBytes} bytes (${bound} by its framing), the decoded batch cap`);
  }
}

function capped(bound: number, maxBytes: number): void {
  if (bound > maxBytes) throw new DecodedTooLarge(bound, maxBytes);
}

/** Raw snappy block (librdkafka) or snappy-java's xerial framing (the Java client). */
export async function snappyDecode(body: Buffer, maxBytes = Infinity): Promise<Buffer> {
  if (body.length < XERIAL_HEADER_BYTES || !body.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC)) {
    capped(snappyBlockSize(body), maxBytes);
    return snappyBlock(body);
  }
  const blocks: Buffer[] = [];
  let decoded = 0;
  for (let offset = XERIAL_HEADER_BYTES; offset < body.length;) {
    if (offset + 4 > body.length) throw new Error(`truncated xerial chunk length at byte ${offset}`);
    const length = body.readUInt32BE(offset);
    offset += 4;
    if (offset + length > body.length) {
      throw new Error(`xerial chunk of ${length} bytes at byte ${offset} runs past the batch end`);
    }
    const block = body.subarray(offset, offset + length);
    decoded += snappyBlockSize(block);
    blocks.push(block);
    offset += length;
  }
  capped(decoded, maxBytes);
  return Buffer.concat(await Promise.all(blocks.map(snappyBlock)));
}

const implementations: Record<
  CodecName,
  { encode(b: Buffer): Promise<Buffer>; decode(b: Buffer, maxBytes: number): Promise<Buffer> }
> = {
  gzip: {
    encode: (b) => gzip(b),
    async decode(b, maxBytes) {
      try {
        return await unzip(b, { maxOutputLength: Math.min(maxBytes, buffer.constants.MAX_LENGTH) });
      } catch (err) {
        if ((err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') {
          throw new DecodedTooLarge(maxBytes + 1, maxBytes);
        }
        throw err;
      }
    },
  },
  snappy: { encode: (b) => snappyCompress(b), decode: snappyDecode },
  lz4: {
    encode: (b) => compressFrame(b),
    decode: (b, maxBytes) => (capped(lz4DecodedBound(b), maxBytes), decompressFrame(b)),
  },
  zstd: {
    encode: (b) => zstdCompress(b, 3),
    decode: (b, maxBytes) => (capped(zstdDecodedBound(b), maxBytes), zstdDecompress(b)),
  },
};

/** The decoded batch cap when none is configured: that of the default fetch and record bounds. */
export const DEFAULT_DECODED_BATCH_MAX_BYTES = 32 * 1024 * 1024;

let decodedBatchMaxBytes = DEFAULT_DECODED_BATCH_MAX_BYTES;

/**
 * The kafkajs codec for one compression type; decode failures, and bodies that would decode to more than
 * `maxDecodedBytes` (by default the process's cap), become KafkaCodecError.
 */
export function kafkaCodec(name: CodecName, maxDecodedBytes?: number): KafkaCodec {
  const impl = implementations[name];
  return {
    compress: (encoder) => impl.encode(encoder.buffer),
    async decompress(buffer) {
      try {
        return await impl.decode(buffer, maxDecodedBytes ?? decodedBatchMaxBytes);
      } catch (err) {
        // Duck-typed: errors from another realm (a test sandbox) are not `instanceof Error`.
        const reason = (err as { message?: unknown } | null)?.message;
        throw new KafkaCodecError(name, buffer.length, typeof reason === 'string' ? reason : String(err));
      }
    },
  };
}

export const CODEC_TYPES = {
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD,
} as const satisfies Record<CodecName, CompressionTypes>;

let registered = false;

/**
 * Registers every codec with kafkajs; idempotent. Called by the one client factory (createKafka), with the
 * configured decoded batch cap when there is one (one per process: the last configured applies).
 */
export function registerKafkaCodecs(maxDecodedBytes?: number): void {
  if (maxDecodedBytes !== undefined) decodedBatchMaxBytes = maxDecodedBytes;
  if (registered) return;
  registered = true;
  for (const name of Object.keys(CODEC_TYPES) as CodecName[]) {
    const codec = kafkaCodec(name);
    CompressionCodecs[CODEC_TYPES[name]] = () => codec;
  }
}
