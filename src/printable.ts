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
