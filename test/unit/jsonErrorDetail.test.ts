/**
 * The JSON part of a malformed_dispatch reason (src/contract/json.ts) is the same whichever Node runs the relay:
 * V8 from Node 22 on appends "(line L column C)" to JSON.parse messages, Node 20's does not, and a dead letter's
 * reason must not change with the runtime (the image runs 24, hosts may run 20).
 */
import { jsonErrorDetail } from '../../src/contract/json';

const parseError = (text: string): unknown => {
  try {
    JSON.parse(text);
  } catch (err) {
    return err;
  }
  throw new Error(`parsed: ${text}`);
};

describe('jsonErrorDetail', () => {
  it("gives Node 20's message for V8's line and column form, with position and what is there", () => {
    const text = '{"a":"x';
    const newer = new SyntaxError('Unterminated string in JSON at position 7 (line 1 column 8)');
    const older = new SyntaxError('Unterminated string in JSON at position 7');
    expect(jsonErrorDetail(text, newer)).toBe('Unterminated string in JSON at position 7 (at the end)');
    expect(jsonErrorDetail(text, newer)).toBe(jsonErrorDetail(text, older));
  });

  it('says no line or column for what this Node reports either', () => {
    for (const text of ['{"a":1,}', '{"a":1}x', '{\n  "a": 1,\n  b: 2\n}', "{'a':1}"]) {
      expect(jsonErrorDetail(text, parseError(text))).not.toMatch(/\(line \d+ column \d+\)/);
    }
  });
});
