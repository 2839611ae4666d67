/**
 * How many bytes a compressed record batch body can decode to at most, read from its framing alone (no
 * decoding, nothing allocated), so that a codec refuses a decompression bomb before producing its output.
 * Owner: the codecs (kafka/codecs.ts) call it; gzip needs none (zlib's `maxOutputLength` stops it mid-way).
 *
 * - snappy: every raw block starts with its decoded length (a varint); the xerial framing is chunks of such blocks.
 * - lz4 (frame format): a compressed block decodes to at most the frame's block maximum (64 KiB-4 MiB), a stored
 *   block to its own size; a declared content size counts too.
 * - zstd: a compressed block decodes to at most 128 KiB (the format's Block_Maximum_Size), a raw or RLE block to
 *   its Block_Size; a declared Frame_Content_Size counts too.
 * A body whose framing cannot be walked throws; the codec reports it as undecodable.
 */

const KiB = 1024;

function varint(buf: Buffer, at: number): number {
  let value = 0;
  for (let i = 0; i < 5; i++) {
    if (at + i >= buf.length) throw new Error('truncated snappy length');
    const byte = buf[at + i]!;
    value += (byte & 0x7f) * 2 ** (7 * i);
    if ((byte & 0x80) === 0) return value;
  }
  throw new Error('snappy length longer than 5 bytes');
}

/** The decoded length a raw snappy block declares. */
export function snappyBlockSize(block: Buffer): number {
  return varint(block, 0);
}

const LZ4_MAGIC = 0x184d2204;
const LZ4_BLOCK_MAX = [0, 0, 0, 0, 64 * KiB, 256 * KiB, 1024 * KiB, 4096 * KiB];

function need(buf: Buffer, at: number, bytes: number, what: string): void {
  if (at + bytes > buf.length) throw new Error(`truncated ${what} at byte ${at}`);
}

/** Skippable frames of lz4 and zstd share one magic range (0x184D2A50-5F) and layout: magic, int32 LE size. */
function skippable(magic: number): boolean {
  return magic >>> 4 === 0x184d2a5;
}

/** At most how many bytes a sequence of LZ4 frames decodes to. */
export function lz4DecodedBound(buf: Buffer): number {
  let total = 0;
  let at = 0;
  while (at < buf.length) {
    need(buf, at, 4, 'lz4 magic');
    const magic = buf.readUInt32LE(at);
    if (skippable(magic)) {
      need(buf, at + 4, 4, 'lz4 skippable frame');
      at += 8 + buf.readUInt32LE(at + 4);
      continue;
    }
    if (magic !== LZ4_MAGIC) throw new Error(`not an lz4 frame at byte ${at}`);
    need(buf, at + 4, 2, 'lz4 frame descriptor');
    const flg = buf[at + 4]!;
    const blockMax = LZ4_BLOCK_MAX[(buf[at + 5]! >> 4) & 7]!;
    if (blockMax === 0) throw new Error('lz4 frame with an invalid block maximum');
    const blockChecksum = (flg & 0x10) !== 0;
    const contentSize = (flg & 0x08) !== 0;
    const contentChecksum = (flg & 0x04) !== 0;
    at += 6;
    let declared = 0;
    if (contentSize) {
      need(buf, at, 8, 'lz4 content size');
      declared = Number(buf.readBigUInt64LE(at));
      at += 8;
    }
    if ((flg & 0x01) !== 0) at += 4; // dictionary id
    at += 1; // header checksum
    let frame = 0;
    for (;;) {
      need(buf, at, 4, 'lz4 block size');
      const word = buf.readUInt32LE(at);
      at += 4;
      if (word === 0) break; // end mark
      const size = word & 0x7fffffff;
      frame += word & 0x80000000 ? size : blockMax;
      at += size + (blockChecksum ? 4 : 0);
    }
    if (contentChecksum) at += 4;
    total += Math.max(frame, declared);
  }
  return total;
}

const ZSTD_MAGIC = 0xfd2fb528;
const ZSTD_BLOCK_MAX = 128 * KiB;

/** At most how many bytes a sequence of zstd frames decodes to. */
export function zstdDecodedBound(buf: Buffer): number {
  let total = 0;
  let at = 0;
  while (at < buf.length) {
    need(buf, at, 4, 'zstd magic');
    const magic = buf.readUInt32LE(at);
    if (skippable(magic)) {
      need(buf, at + 4, 4, 'zstd skippable frame');
      at += 8 + buf.readUInt32LE(at + 4);
      continue;
    }
    if (magic !== ZSTD_MAGIC) throw new Error(`not a zstd frame at byte ${at}`);
    need(buf, at + 4, 1, 'zstd frame header');
    const fhd = buf[at + 4]!;
    const fcsFlag = fhd >> 6;
    const singleSegment = (fhd & 0x20) !== 0;
    const checksum = (fhd & 0x04) !== 0;
    at += 5 + (singleSegment ? 0 : 1) + [0, 1, 2, 4][fhd & 0x03]!;
    const fcsBytes = [singleSegment ? 1 : 0, 2, 4, 8][fcsFlag]!;
    need(buf, at, fcsBytes, 'zstd content size');
    let declared = 0;
    if (fcsBytes === 8) declared = Number(buf.readBigUInt64LE(at));
    else if (fcsBytes > 0) declared = buf.readUIntLE(at, fcsBytes) + (fcsBytes === 2 ? 256 : 0);
    at += fcsBytes;
    let frame = 0;
    for (let last = false; !last;) {
      need(buf, at, 3, 'zstd block header');
      const header = buf.readUIntLE(at, 3);
      at += 3;
      last = (header & 1) === 1;
      const type = (header >> 1) & 3;
      const size = header >>> 3;
      if (type === 3) throw new Error(`zstd block of the reserved type at byte ${at - 3}`);
      frame += type === 2 ? ZSTD_BLOCK_MAX : size;
      at += type === 1 ? 1 : size;
    }
    if (checksum) at += 4;
    total += Math.max(frame, declared);
  }
  return total;
}
