/**
 * Decompression bombs: a record batch of a few MiB or less whose body expands to a GiB. The codecs refuse it
 * with a KafkaCodecError (the hold path of an undecodable batch) without producing the output: the process's
 * peak resident memory grows by far less than the bomb would take.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { CompressionCodecs } from 'kafkajs';
import { compressFrameSync } from 'lz4-napi';
import { compressSync as snappyCompressSync } from 'snappy';
import { loadRelayConfig } from '../../src/config';
import {
  CODEC_TYPES,
  type CodecName,
  DEFAULT_DECODED_BATCH_MAX_BYTES,
  KafkaCodecError,
  kafkaCodec,
  registerKafkaCodecs,
} from '../../src/kafka/codecs';
import { lz4DecodedBound, zstdDecodedBound } from '../../src/kafka/decodedSize';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** gzip: members of zeros concatenated (one gzip stream of many members); `decoded` bytes in all. */
function gzipBomb(decoded: number): Buffer {
  const member = zlib.gzipSync(Buffer.alloc(64 * MiB), { level: 9 });
  return Buffer.concat(Array.from({ length: decoded / (64 * MiB) }, () => member));
}

/** zstd: one frame (no content size) of RLE blocks of 128 KiB, four bytes each. */
function zstdBomb(decoded: number): Buffer {
  const blocks = decoded / (128 * 1024);
  const header = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58]);
  const body = Buffer.alloc(blocks * 4);
  for (let i = 0; i < blocks; i++) {
    const last = i === blocks - 1 ? 1 : 0;
    body.writeUIntLE(((128 * 1024) << 3) | (1 << 1) | last, i * 4, 3);
  }
  return Buffer.concat([header, body]);
}

/** lz4: one frame whose 64 KiB block of zeros is repeated (blocks are independent, no checksums). */
function lz4Bomb(decoded: number): Buffer {
  const one = compressFrameSync(Buffer.alloc(64 * 1024));
  const headerBytes = 7;
  const blockBytes = 4 + one.readUInt32LE(headerBytes);
  const block = one.subarray(headerBytes, headerBytes + blockBytes);
  const blocks = Array.from({ length: decoded / (64 * 1024) }, () => block);
  return Buffer.concat([one.subarray(0, headerBytes), ...blocks, Buffer.alloc(4)]);
}

/** snappy: xerial framing (the Java client's) of 4 MiB chunks of zeros. */
function snappyBomb(decoded: number): Buffer {
  const chunk = snappyCompressSync(Buffer.alloc(4 * MiB));
  const header = Buffer.alloc(16);
  Buffer.from('\x82SNAPPY\0', 'latin1').copy(header);
  header.writeInt32BE(1, 8);
  header.writeInt32BE(1, 12);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(chunk.length);
  return Buffer.concat([
    header,
    ...Array.from({ length: decoded / (4 * MiB) }, () => [length, chunk]).flat(),
  ]);
}

const BOMBS: [CodecName, () => Buffer][] = [
  ['gzip', () => gzipBomb(GiB)],
  ['zstd', () => zstdBomb(GiB)],
  ['lz4', () => lz4Bomb(512 * MiB)],
  ['snappy', () => snappyBomb(256 * MiB)],
];

/** Peak resident set size of this process so far, in bytes. */
const peakRss = () => process.resourceUsage().maxRSS * 1024;

describe('decompression bombs', () => {
  test.each(BOMBS)(
    '%s: a body that expands past the cap is refused as undecodable, without allocating its output',
    async (name, make) => {
      const bomb = make();
      expect(bomb.length).toBeLessThan(16 * MiB);
      const before = peakRss();
      const err = await kafkaCodec(name)
        .decompress(bomb)
        .then(
          (out) => `decoded ${out.length} bytes`,
          (e: unknown) => e,
        );
      const grown = peakRss() - before;
      expect(err).toBeInstanceOf(KafkaCodecError);
      expect(err).toMatchObject({ codec: name, compressedBytes: bomb.length, retriable: false });
      expect((err as KafkaCodecError).reason).toMatch(/decodes to more than \d+ bytes/);
      expect(grown).toBeLessThan(128 * MiB);
    },
  );

  test('snappy: a raw block whose length prefix claims more than the cap is refused before decoding', async () => {
    // varint 0xFFFFFFFF (4 GiB - 1), then a few bytes that are not that much snappy.
    const claim = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x01, 0x02]);
    await expect(kafkaCodec('snappy').decompress(claim)).rejects.toMatchObject({
      codec: 'snappy',
      reason: expect.stringMatching(/decodes to more than \d+ bytes/),
    });
  });
});

describe('the decoded batch cap', () => {
  const FIXTURES = path.join(__dirname, '..', 'fixtures', 'codecs');
  const javaBody = (name: CodecName) => fs.readFileSync(path.join(FIXTURES, `java-${name}.bin`));

  test('is derived from the fetch and record bounds: four fetches, or two of the largest records', () => {
    const base = { KAFKA_BROKERS: 'k:9092' };
    const cap = (env: Record<string, string>) =>
      loadRelayConfig('ingester', { ...base, ...env }).kafka.decodedBatchMaxBytes;
    expect(cap({})).toBe(DEFAULT_DECODED_BATCH_MAX_BYTES);
    expect(DEFAULT_DECODED_BATCH_MAX_BYTES).toBe(4 * 8 * MiB);
    expect(cap({ POIMEN_KAFKA_FETCH_MAX_BYTES: String(2 * MiB) })).toBe(8 * MiB);
    expect(cap({ POIMEN_KAFKA_FETCH_MAX_BYTES: String(2 * MiB), DISPATCH_MAX_BYTES: String(50 * MiB) })).toBe(
      100 * MiB,
    );
  });

  test.each([
    ['gzip', (plain: Buffer) => plain.length],
    ['snappy', (plain: Buffer) => plain.length],
    ['lz4', (_: Buffer, body: Buffer) => lz4DecodedBound(body)],
    ['zstd', (_: Buffer, body: Buffer) => zstdDecodedBound(body)],
  ] as [CodecName, (plain: Buffer, body: Buffer) => number][])(
    '%s: a body whose decoded size (or framing bound) is the cap decodes; a cap one byte less refuses it',
    async (name, size) => {
      const body = javaBody(name);
      const plain = await kafkaCodec(name).decompress(body);
      const cap = size(plain, body);
      expect((await kafkaCodec(name, cap).decompress(body)).equals(plain)).toBe(true);
      await expect(kafkaCodec(name, cap - 1).decompress(body)).rejects.toThrow(
        new RegExp(`decodes to more than ${cap - 1} bytes`),
      );
    },
  );

  test('the framing bounds of the Java bodies exceed what they decode to by less than one block', async () => {
    for (const [name, bound, block] of [
      ['lz4', lz4DecodedBound, 64 * 1024],
      ['zstd', zstdDecodedBound, 128 * 1024],
    ] as const) {
      const plain = await kafkaCodec(name).decompress(javaBody(name));
      expect(bound(javaBody(name))).toBeGreaterThanOrEqual(plain.length);
      expect(bound(javaBody(name))).toBeLessThan(plain.length + block);
    }
  });

  test('registration sets the process cap that the registered codecs apply', async () => {
    registerKafkaCodecs(1024);
    try {
      const codec = CompressionCodecs[CODEC_TYPES.zstd]() as ReturnType<typeof kafkaCodec>;
      await expect(codec.decompress(javaBody('zstd'))).rejects.toThrow(/decodes to more than 1024 bytes/);
    } finally {
      registerKafkaCodecs(DEFAULT_DECODED_BATCH_MAX_BYTES);
    }
  });
});
