/**
 * Text helpers for what comes from outside and is shown or stored within a bound. Pure (no Node APIs): the
 * contract's modules use them too.
 */

const utf8 = new TextEncoder();

/** At most `maxBytes` of UTF-8, cut between characters (never through a surrogate pair), `…` marking a cut. */
export function utf8Head(text: string, maxBytes: number): string {
  if (utf8.encode(text).length <= maxBytes) return text;
  let out = '';
  let size = 0;
  for (const ch of text) {
    const n = utf8.encode(ch).length;
    if (size + n > maxBytes - 3) break; // '…' is three bytes
    out += ch;
    size += n;
  }
  return `${out}…`;
}

/**
 * Text from outside (a producer's field, an API's answer) made safe to show on one line: every control character
 * (C0, DEL, C1: an escape sequence that would drive a terminal, a line break) becomes a space.
 */
export function printable(text: string): string {
  let out = '';
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    out += c < 0x20 || (c >= 0x7f && c <= 0x9f) ? ' ' : ch;
  }
  return out;
}
