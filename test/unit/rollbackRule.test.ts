/**
 * docs/operations.md's rollback rule tells an operator to compare the patch ids in src/contract/workflow.ts
 * between two builds: that holds only while every `patched()` of the workflow code names a constant exported
 * there, never a string written in place.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as types from '../../src/contract/workflow';

const ROOT = path.join(__dirname, '..', '..');
const WORKFLOWS = path.join(ROOT, 'src', 'workflows');

function patchCalls(): string[] {
  const args: string[] = [];
  for (const file of fs.readdirSync(WORKFLOWS).filter((f) => f.endsWith('.ts'))) {
    const text = fs.readFileSync(path.join(WORKFLOWS, file), 'utf8');
    for (const m of text.matchAll(/\b(?:patched|deprecatePatch)\(\s*([^)]*?)\s*\)/g)) args.push(m[1]!);
  }
  return args;
}

test('every patched() in the workflow code names a patch id exported from src/contract/workflow.ts', () => {
  const args = patchCalls();
  expect(args.length).toBeGreaterThan(0);
  const exported = types as unknown as Record<string, unknown>;
  for (const arg of args) {
    expect(arg).toMatch(/^[A-Z][A-Z0-9_]*_PATCH$/);
    expect(typeof exported[arg]).toBe('string');
  }
});

test('the rollback rule in docs/operations.md points at that file', () => {
  const ops = fs.readFileSync(path.join(ROOT, 'docs', 'operations.md'), 'utf8');
  const rule = ops.slice(ops.indexOf('**Rollback:'));
  expect(rule.slice(0, 600)).toContain('`src/contract/workflow.ts`');
});
