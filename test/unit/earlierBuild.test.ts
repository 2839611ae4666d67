/**
 * The cached build of an earlier commit (test/support/earlierBuild.ts) is shared by every checkout on the machine:
 * a cache made by a checkout that has since been removed must still run, with this checkout's dependencies.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../support/cli';
import { earlierBuild } from '../support/earlierBuild';

const COMMIT = 'cafe0000';
let cache: string;
const saved = process.env['POIMEN_CACHE_DIR'];

beforeEach(() => {
  cache = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-earlier-'));
  process.env['POIMEN_CACHE_DIR'] = cache;
});
afterEach(() => {
  if (saved === undefined) delete process.env['POIMEN_CACHE_DIR'];
  else process.env['POIMEN_CACHE_DIR'] = saved;
  fs.rmSync(cache, { recursive: true, force: true });
});

function cachedBuild(nodeModules: string): string {
  const dir = path.join(cache, 'earlier-builds', COMMIT);
  fs.mkdirSync(path.join(dir, 'dist'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'dist', 'workflow-bundle.js'), '');
  fs.symlinkSync(nodeModules, path.join(dir, 'node_modules'));
  return dir;
}

test('a cached build linked to a checkout since removed is linked to this checkout’s dependencies', () => {
  const dir = cachedBuild(path.join(cache, 'removed-checkout', 'node_modules'));
  expect(earlierBuild(COMMIT)).toBe(dir);
  expect(fs.readlinkSync(path.join(dir, 'node_modules'))).toBe(path.join(REPO_ROOT, 'node_modules'));
  expect(fs.existsSync(path.join(dir, 'node_modules', 'commander', 'package.json'))).toBe(true);
});

test('a cached build already linked to this checkout is used as it is', () => {
  const dir = cachedBuild(path.join(REPO_ROOT, 'node_modules'));
  expect(earlierBuild(COMMIT)).toBe(dir);
  expect(fs.readlinkSync(path.join(dir, 'node_modules'))).toBe(path.join(REPO_ROOT, 'node_modules'));
  expect(fs.readdirSync(path.dirname(dir))).toEqual([COMMIT]);
});
