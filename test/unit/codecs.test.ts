/**
 * The codecs the ingester decodes record batches with, against bodies written by Apache Kafka's Java client
 * (xerial-framed snappy, Kafka's LZ4 frames, zstd frames, gzip) and the raw snappy block librdkafka writes.
 * Fixtures: test/fixtures/codecs/GenFixtures.java.
 */
import fs from 'node:fs';
import path from 'node:path';
import { CompressionCodecs, CompressionTypes, KafkaJSNonRetriableError } from 'kafkajs';
import { codecDecodeBench } from '../../tools/bench/codecs';
import {
  CODEC_TYPES,
  type CodecName,
  KafkaCodecError,
  codecErrorIn,
  kafkaCodec,
  registerKafkaCodecs,
} from '../../src/kafka/codecs';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'codecs');
const fixture = (name: string) => fs.readFileSync(path.join(FIXTURES, name));

/** The text GenFixtures.java compresses: "record i\n" lines up to 72 KiB (several snappy chunks, two LZ4 blocks). */
function plaintext(): Buffer {
  let s = '';
  for (let i = 0; s.length < 72 * 1024; i++) s += `record ${i}\n`;
  return Buffer.from(s);
}

const CODECS: CodecName[] = ['gzip', 'snappy', 'lz4', 'zstd'];

describe('Kafka codecs', () => {
  test.each(CODECS)('%s decodes the body the Java client writes', async (name) => {
    expect((await kafkaCodec(name).decompress(fixture(`java-${name}.bin`))).equals(plaintext())).toBe(true);
  });

  test('snappy: the Java body is xerial-framed in several chunks, and a raw block (librdkafka) decodes too', async () => {
    const java = fixture('java-snappy.bin');
    expect(java.subarray(0, 8)).toEqual(Buffer.from('\x82SNAPPY\0', 'latin1'));
    expect(java.readUInt32BE(16)).toBeLessThan(java.length - 20);
    const raw = fixture('raw-snappy.bin');
    expect(raw[0]).not.toBe(0x82);
    expect((await kafkaCodec('snappy').decompress(raw)).equals(plaintext())).toBe(true);
  });

  test.each(CODECS)('%s: what the relay compresses decodes to the same bytes', async (name) => {
    const codec = kafkaCodec(name);
    const body = await codec.compress({ buffer: plaintext() });
    expect(body.length).toBeLessThan(plaintext().length / 2);
    expect((await codec.decompress(body)).equals(plaintext())).toBe(true);
  });

  test.each(CODECS)(
    '%s: a corrupt body fails with a KafkaCodecError naming the codec, not retriable',
    async (name) => {
      const good = fixture(`java-${name}.bin`);
      const corrupt = Buffer.from(good);
      corrupt.fill(0xff, 20, 60);
      const err = await kafkaCodec(name)
        .decompress(corrupt)
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(KafkaCodecError);
      expect(err).toMatchObject({ codec: name, compressedBytes: corrupt.length, retriable: false });
      expect((err as Error).message).toContain(`${name}-compressed record batch`);
    },
  );

  test('a crash handler finds the codec error inside the error kafkajs wraps it in (cause: e.cause || e)', async () => {
    const err = await kafkaCodec('zstd')
      .decompress(Buffer.from('not zstd'))
      .then(
        () => undefined,
        (e: unknown) => e as Error & { cause?: unknown },
      );
    // kafkajs's runtime takes the options its type declaration leaves out (retry/index.js).
    const Wrapper = KafkaJSNonRetriableError as unknown as new (e: Error, o: { cause: unknown }) => Error;
    const wrapped = new Wrapper(err!, { cause: err!.cause ?? err });
    expect(wrapped.name).toBe('KafkaJSNonRetriableError');
    expect(codecErrorIn(wrapped)).toBe(err);
    expect(codecErrorIn(new Error('other'))).toBeUndefined();
  });

  test('a xerial chunk that runs past the body is refused, not read short', async () => {
    const java = fixture('java-snappy.bin');
    await expect(kafkaCodec('snappy').decompress(java.subarray(0, java.length - 1))).rejects.toThrow(
      /runs past the batch end/,
    );
  });

  test('registration replaces kafkajs "not implemented" for every compression type', async () => {
    expect(() => CompressionCodecs[CompressionTypes.Snappy]()).toThrow(/not implemented/);
    registerKafkaCodecs();
    registerKafkaCodecs();
    for (const name of CODECS) {
      const codec = CompressionCodecs[CODEC_TYPES[name]]() as ReturnType<typeof kafkaCodec>;
      expect((await codec.decompress(fixture(`java-${name}.bin`))).equals(plaintext())).toBe(true);
    }
  });

  test('the decode bench measures every codec at 16 KiB and 1 MiB, on bodies that decode to their records', async () => {
    const figures = await codecDecodeBench(35);
    expect(figures.map((f) => [f.codec, f.batch_bytes])).toEqual(
      [16 * 1024, 1024 * 1024].flatMap((bytes) => CODECS.map((c) => [c, bytes])),
    );
    for (const f of figures) {
      expect(f.ratio).toBeGreaterThan(2);
      expect(f.us_per_batch).toBeGreaterThan(0);
      // MB/s is bytes per µs: the two figures describe the same rounds, each rounded to 0.1. Their product is off by at
      // most what the two roundings allow, whatever the machine's speed (a slow one gives few MB/s, a fast one few µs).
      const roundingSlack = 0.05 * f.us_per_batch + 0.05 * f.mb_per_s + 0.01;
      expect(Math.abs(f.mb_per_s * f.us_per_batch - f.batch_bytes)).toBeLessThanOrEqual(roundingSlack);
    }
  });
});
