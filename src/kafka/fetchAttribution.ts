/**
 * Names the partition of a record batch that cannot be decoded. kafkajs decodes a broker's whole fetch response
 * at once and a codec is handed the batch body alone, so the codec's error says neither topic, partition nor
 * offset. kafkajs's Fetch response decoder (protocol/requests/fetch, versions 4-11: every broker from Kafka
 * 0.11 on) is wrapped here: when decoding a response fails with a KafkaCodecError, the response is walked again
 * partition by partition, each compressed batch decoded alone, and the error is given the partitions and
 * offsets of the batches that fail (`located`) before it goes on to crash the consumer. The ingester then holds
 * exactly those partitions with no probing (ingest/undecodable.ts). Registered by the client factory (client.ts).
 */
import { createRequire } from 'node:module';
import { type CodecName, type KafkaCodec, type LocatedBatch, codecErrorIn, kafkaCodec } from './codecs';

interface FetchResponse {
  decode(raw: Buffer): Promise<unknown>;
  parse(decoded: unknown): Promise<unknown>;
}
type FetchProtocol = (opts: { version: number }) => (args: unknown) => { response: FetchResponse };

const CODECS: Record<number, CodecName> = { 1: 'gzip', 2: 'snappy', 3: 'lz4', 4: 'zstd' };
// baseOffset 8, length 4, leader epoch 4, magic 1, crc 4, attributes 2, last offset delta 4, timestamps 16,
// producer id 8, producer epoch 2, base sequence 4, record count 4.
const BATCH_HEADER_BYTES = 61;
const MAGIC_AT = 16;
const ATTRIBUTES_AT = 21;

class Reader {
  at = 0;
  constructor(readonly buf: Buffer) {}
  int16(): number {
    const v = this.buf.readInt16BE(this.at);
    this.at += 2;
    return v;
  }
  int32(): number {
    const v = this.buf.readInt32BE(this.at);
    this.at += 4;
    return v;
  }
  skip(bytes: number): void {
    this.at += bytes;
  }
  bytes(n: number): Buffer {
    const b = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return b;
  }
}

/** The first batch of one partition's record set that its codec cannot decode, if any. */
async function firstUndecodable(
  records: Buffer,
  codecs: Partial<Record<CodecName, KafkaCodec>>,
): Promise<{ offset: string; codec: CodecName; reason: string } | undefined> {
  for (let at = 0; at + BATCH_HEADER_BYTES <= records.length;) {
    const length = records.readInt32BE(at + 8);
    const end = at + 12 + length;
    if (end > records.length) return undefined; // a partial batch at the end of the fetch
    const codec = CODECS[records.readInt16BE(at + ATTRIBUTES_AT) & 0x07];
    if (records[at + MAGIC_AT] === 2 && codec) {
      try {
        await (codecs[codec] ??= kafkaCodec(codec)).decompress(
          records.subarray(at + BATCH_HEADER_BYTES, end),
        );
      } catch (err) {
        const e = codecErrorIn(err);
        if (e) return { offset: records.readBigInt64BE(at).toString(), codec: e.codec, reason: e.reason };
        throw err;
      }
    }
    at = end;
  }
  return undefined;
}

/** Walks a Fetch response (v4-v11) and finds, per partition, the first batch that cannot be decoded. */
export async function locateUndecodable(raw: Buffer, version: number): Promise<LocatedBatch[]> {
  const r = new Reader(raw);
  r.skip(version >= 7 ? 10 : 4); // throttle time; from v7 also error code and session id
  const found: LocatedBatch[] = [];
  const codecs: Partial<Record<CodecName, KafkaCodec>> = {};
  for (let topics = r.int32(); topics > 0; topics--) {
    const topic = r.bytes(r.int16()).toString('utf8');
    for (let partitions = r.int32(); partitions > 0; partitions--) {
      const partition = r.int32();
      r.skip(2 + 8 + 8 + (version >= 5 ? 8 : 0)); // error code, high watermark, last stable, log start
      const aborted = r.int32();
      r.skip(Math.max(aborted, 0) * 16 + (version >= 11 ? 4 : 0)); // aborted transactions, preferred replica
      const size = r.int32();
      if (size <= 0) continue;
      const records = r.bytes(Math.min(size, raw.length - r.at));
      const bad = await firstUndecodable(records, codecs);
      if (bad) found.push({ topic, partition, ...bad });
    }
  }
  return found;
}

function attributing(response: FetchResponse, version: number): FetchResponse {
  return {
    parse: (decoded) => response.parse(decoded),
    async decode(raw) {
      try {
        return await response.decode(raw);
      } catch (err) {
        const codecError = codecErrorIn(err);
        if (codecError && !codecError.located) {
          // Naming the batches is best effort: the crash goes on with or without them.
          codecError.located = await locateUndecodable(raw, version).catch(() => undefined);
        }
        throw err;
      }
    },
  };
}

let wrapped = false;

/** Wraps kafkajs's Fetch response decoding once per process (kafkajs's request table is module-level). */
export function attributeFetchDecodeErrors(): void {
  if (wrapped) return;
  wrapped = true;
  const load = createRequire(require.resolve('kafkajs'));
  const fetch = load('./src/protocol/requests/fetch') as { protocol: FetchProtocol };
  const original = fetch.protocol;
  fetch.protocol = ({ version }) => {
    const make = original({ version });
    if (version < 4) return make; // message sets of magic 0/1: left to the probe
    return (args) => {
      const request = make(args);
      return { ...request, response: attributing(request.response, version) };
    };
  };
}
