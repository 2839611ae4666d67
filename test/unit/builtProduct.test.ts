/**
 * scripts/builtProduct.js, run before the dev stack's and the tools' builds: each is compiled against a build it
 * does not make (dist/ for both; dist-devstack/ too for the tools), so a missing or stale one is one line naming
 * the build to run (exit 2), and only then is the output folder cleared. Run in a scratch copy of the layout.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const SCRIPT = path.resolve(__dirname, '../../scripts/builtProduct.js');
const OLD = new Date('2026-01-01T00:00:00Z');
const NEW = new Date('2026-01-02T00:00:00Z');

/** A scratch repository: the script, a source under src/ and devstack/, and the builds present as given. */
function scratch(built: { dist?: Date; devstack?: Date }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'built-product-'));
  const file = (rel: string, time: Date, text = ''): void => {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
    fs.utimesSync(path.join(dir, rel), time, time);
  };
  fs.mkdirSync(path.join(dir, 'scripts'));
  fs.copyFileSync(SCRIPT, path.join(dir, 'scripts', 'builtProduct.js'));
  file('src/index.ts', OLD);
  file('devstack/stack/stack.ts', OLD);
  if (built.dist) file('dist/index.d.ts', built.dist);
  if (built.devstack) file('dist-devstack/devstack/config.d.ts', built.devstack);
  file('dist-tools/tools/stale.js', OLD);
  return dir;
}

function run(dir: string, out: string): { status: number | null; stderr: string; cleared: boolean } {
  const r = spawnSync(process.execPath, [path.join(dir, 'scripts', 'builtProduct.js'), out], {
    encoding: 'utf8',
  });
  const cleared = !fs.existsSync(path.join(dir, 'dist-tools'));
  fs.rmSync(dir, { recursive: true, force: true });
  return { status: r.status, stderr: r.stderr, cleared };
}

describe('scripts/builtProduct.js', () => {
  test('the tools need the dev stack built, and not older than devstack/', () => {
    expect(run(scratch({ dist: NEW }), 'dist-tools')).toEqual({
      status: 2,
      stderr:
        'dist-tools is built against dist-devstack/, and dist-devstack/ is not built: run npm run build:devstack first\n',
      cleared: false,
    });
    expect(run(scratch({ dist: NEW, devstack: new Date(OLD.getTime() - 1000) }), 'dist-tools')).toEqual({
      status: 2,
      stderr:
        'dist-tools is built against dist-devstack/, and dist-devstack/ is older than devstack/: run npm run build:devstack first\n',
      cleared: false,
    });
    expect(run(scratch({ dist: NEW, devstack: NEW }), 'dist-tools')).toEqual({
      status: 0,
      stderr: '',
      cleared: true,
    });
  });

  test('both need dist/ first; the dev stack does not need itself', () => {
    expect(run(scratch({ devstack: NEW }), 'dist-tools')).toMatchObject({
      status: 2,
      stderr: 'dist-tools is built against dist/, and dist/ is not built: run npm run build first\n',
    });
    expect(run(scratch({ dist: new Date(OLD.getTime() - 1000) }), 'dist-devstack')).toMatchObject({
      status: 2,
      stderr: 'dist-devstack is built against dist/, and dist/ is older than src/: run npm run build first\n',
    });
    expect(run(scratch({ dist: NEW }), 'dist-devstack')).toMatchObject({ status: 0, stderr: '' });
  });
});
