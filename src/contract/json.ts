/** JSON and UTF-8 helpers shared by the dispatch validator and the dead-letter codec. Pure: no Node APIs. */

export type JsonObject = Record<string, unknown>;

export function jsonErrorDetail(text: string, err: unknown): string {
  if (text.startsWith('\uFEFF')) return 'starts with a second byte order mark (U+FEFF)';
  const nul = text.indexOf('\u0000');
  if (nul >= 0) return `NUL character at position ${nul} (UTF-16 or binary data?)`;
  // V8 from Node 22 on adds "(line L column C)": dropped, so a reason is the same on every supported Node.
  const message = (err instanceof Error ? err.message : String(err)).replace(/ \(line \d+ column \d+\)/, '');
  // V8 gives one message for many faults (a comment, single quotes, an unquoted name): show what is there.
  const at = /at position (\d+)/.exec(message);
  if (!at) return message;
  const near = text.slice(Number(at[1]), Number(at[1]) + 16);
  if (near === '') return `${message} (at the end)`;
  return `${message} (near ${JSON.stringify(near)}${near.length === 16 ? '…' : ''})`;
}

/** Where and how bytes that TextDecoder refused break UTF-8 (RFC 3629), for a reason an operator can act on. */
export function describeUtf8Error(bytes: Uint8Array): string {
  const hex = (b: number | undefined) => `0x${(b ?? 0).toString(16).padStart(2, '0')}`;
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'starts with a UTF-16 LE byte order mark (FF FE)';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'starts with a UTF-16 BE byte order mark (FE FF)';
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b < 0x80) continue;
    const at = `at byte offset ${i}`;
    if (b < 0xc0) return `unexpected continuation byte ${hex(b)} ${at}`;
    if (b < 0xc2) return `overlong encoding (lead byte ${hex(b)}) ${at}`;
    if (b > 0xf4) return `byte ${hex(b)} ${at} never appears in UTF-8`;
    const need = b < 0xe0 ? 1 : b < 0xf0 ? 2 : 3;
    for (let k = 1; k <= need; k++) {
      const next = bytes[i + k];
      if (next === undefined) return `truncated ${need + 1}-byte sequence ${at} (value ends)`;
      if ((next & 0xc0) !== 0x80) {
        return `truncated ${need + 1}-byte sequence ${at} (${hex(next)} is not a continuation byte)`;
      }
    }
    const second = bytes[i + 1]!;
    if ((b === 0xe0 && second < 0xa0) || (b === 0xf0 && second < 0x90)) {
      return `overlong encoding (${hex(b)} ${hex(second)}) ${at}`;
    }
    if (b === 0xed && second >= 0xa0) return `UTF-16 surrogate encoded as UTF-8 (CESU-8) ${at}`;
    if (b === 0xf4 && second >= 0x90) return `code point above U+10FFFF ${at}`;
    i += need;
  }
  return 'invalid byte sequence';
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function jsonTypeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

export function codePointLength(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/** Strict UTF-8 decode (BOM stripped); undefined when the bytes are not valid UTF-8. */
export function decodeUtf8(bytes: Uint8Array, keepBom = false): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: keepBom }).decode(bytes);
  } catch {
    return undefined;
  }
}
