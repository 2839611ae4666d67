/**
 * Decode cost of each Kafka codec the ingester registers, side by side in one run: µs per record batch body
 * and MB/s of records produced, for a 16 KiB batch (a Java producer's default batch.size) and a 1 MiB one (a
 * full fetch of one partition). The bodies are dispatch records as JSON, compressed by the relay's own codecs
 * (Kafka's Java client reads that output; test/unit/codecs.test.ts decodes what the Java client writes).
 * Decodes run one after another, as kafkajs decodes the batches of a fetch response. About 6 s in all.
 *
 * `npm run bench -- --codecs` runs this alone; the full and quick benchmarks include it.
 */
import { performance } from 'node:perf_hooks';
import { type CodecName, kafkaCodec } from 'poimen-relay/internal/kafka/codecs';
import { round } from './measure';

export interface CodecDecodeFigure {
  codec: CodecName;
  batch_bytes: number;
  compressed_bytes: number;
  ratio: number;
  us_per_batch: number;
  mb_per_s: number;
  batches: number;
}

const CODECS: CodecName[] = ['gzip', 'snappy', 'lz4', 'zstd'];
const ROUNDS = 7;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Dispatch records as JSON lines, varied enough that the ratio resembles real traffic rather than zeros. */
function recordsOf(bytes: number): Buffer {
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const line = `${JSON.stringify({
      workflow_ref: `onboarding@v${i % 7}`,
      input: { user: (i * 7919) % 100_003, plan: ['free', 'team', 'enterprise'][i % 3], note: `step ${i}` },
      goal_id: `g-${(i * 31) % 997}`,
      dispatch_key: `d-${i.toString(36)}-${((i * 2654435761) >>> 0).toString(16)}`,
    })}\n`;
    parts.push(line);
    size += line.length;
  }
  return Buffer.from(parts.join('')).subarray(0, bytes);
}

async function measure(codec: CodecName, plain: Buffer, budgetMs: number): Promise<CodecDecodeFigure> {
  const c = kafkaCodec(codec);
  const body = await c.compress({ buffer: plain });
  const check = await c.decompress(body);
  if (!check.equals(plain)) throw new Error(`${codec}: decoded bytes differ from the original`);
  for (let i = 0; i < 20; i++) await c.decompress(body); // warm-up: the native module and the thread pool
  // The median of several short rounds: on a shared 2-core machine one round can land in a neighbour's burst.
  const rounds: number[] = [];
  let batches = 0;
  for (let r = 0; r < ROUNDS; r++) {
    let n = 0;
    const start = performance.now();
    let elapsed = 0;
    while (elapsed < budgetMs / ROUNDS || n < 10) {
      await c.decompress(body);
      n++;
      elapsed = performance.now() - start;
    }
    rounds.push((elapsed * 1000) / n);
    batches += n;
  }
  const usPerBatch = median(rounds);
  return {
    codec,
    batch_bytes: plain.length,
    compressed_bytes: body.length,
    ratio: round(plain.length / body.length, 2),
    us_per_batch: round(usPerBatch, 1),
    mb_per_s: round(plain.length / usPerBatch, 1),
    batches,
  };
}

/** Every codec at 16 KiB and 1 MiB batches, `budgetMs` of decoding each (the median of 7 rounds). */
export async function codecDecodeBench(budgetMs = 700): Promise<CodecDecodeFigure[]> {
  const figures: CodecDecodeFigure[] = [];
  for (const bytes of [16 * 1024, 1024 * 1024]) {
    const plain = recordsOf(bytes);
    for (const codec of CODECS) figures.push(await measure(codec, plain, budgetMs));
  }
  return figures;
}

export function codecTable(figures: CodecDecodeFigure[]): string {
  const head = `  ${'codec'.padEnd(8)}${'batch'.padStart(9)}${'ratio'.padStart(8)}${'µs/batch'.padStart(11)}${'MB/s'.padStart(9)}\n`;
  return (
    head +
    figures
      .map(
        (f) =>
          `  ${f.codec.padEnd(8)}${`${Math.round(f.batch_bytes / 1024)} KiB`.padStart(9)}${String(f.ratio).padStart(8)}${String(f.us_per_batch).padStart(11)}${String(f.mb_per_s).padStart(9)}\n`,
      )
      .join('')
  );
}
