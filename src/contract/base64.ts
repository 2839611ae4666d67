/** Base64 as the dead-letter record writes it (payload, key, header values): padded RFC 4648, read strictly. */

// Linear checks, no backtracking: a dead letter's payload may be megabytes of base64.
const BASE64_CHARS = /^[A-Za-z0-9+/]*={0,2}$/;

export function base64Encode(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** Strict padded base64 (RFC 4648): undefined on any character or length outside it, where Buffer alone would skip them. */
export function base64Decode(text: string): Uint8Array | undefined {
  return text.length % 4 === 0 && BASE64_CHARS.test(text)
    ? new Uint8Array(Buffer.from(text, 'base64'))
    : undefined;
}
