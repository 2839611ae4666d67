/**
 * The Kubernetes schemas' cache (test/support/kubeconform.ts) is filled by whichever jest worker needs it first;
 * two may fill it at once. A finished copy already in place is kept, never removed under a neighbour reading it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { placeOnce } from '../support/kubeconform';

let dir: string;
const folder = (name: string, files: Record<string, string>) => {
  const d = path.join(dir, name);
  fs.mkdirSync(d, { recursive: true });
  for (const [f, text] of Object.entries(files)) fs.writeFileSync(path.join(d, f), text);
  return d;
};

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-place-once-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

test('a finished copy goes into place', () => {
  const staging = folder('mine.tmp', { '.complete': 'x', 'a.json': 'mine' });
  placeOnce(staging, path.join(dir, 'target'));
  expect(fs.readFileSync(path.join(dir, 'target', 'a.json'), 'utf8')).toBe('mine');
});

test("a neighbour's finished copy already in place is kept", () => {
  const target = folder('target', { '.complete': 'x', 'a.json': 'theirs' });
  const staging = folder('mine.tmp', { '.complete': 'x', 'a.json': 'mine' });
  placeOnce(staging, target);
  expect(fs.readFileSync(path.join(target, 'a.json'), 'utf8')).toBe('theirs');
});

test("an interrupted run's unfinished target is replaced", () => {
  const target = folder('target', { 'a.json': 'half' });
  const staging = folder('mine.tmp', { '.complete': 'x', 'a.json': 'mine' });
  placeOnce(staging, target);
  expect(fs.readFileSync(path.join(target, 'a.json'), 'utf8')).toBe('mine');
});
