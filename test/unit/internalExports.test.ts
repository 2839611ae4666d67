/**
 * The dev stack and the tools use the product as its built package, `poimen-relay/internal/<module>` (tsconfig.json
 * says why). Three resolvers read that name: Node at run time (package.json's `./internal/*` export, by
 * self-reference), tsc (`paths`: src/ for typecheck and lint, dist/ for the builds of devstack/ and tools/) and
 * jest (moduleNameMapper: src/). tsc's `paths` finds a folder's index.ts where Node's exports look up no index, so
 * a specifier can typecheck and still fail at run time: here every specifier the dev stack and the tools write is
 * resolved by Node itself, in a scratch package holding this package.json and an empty dist/ file per module of
 * src/, with no build; and the four mappings are checked to name the same module. The tools use the dev stack
 * the same way, as `#devstack/<module>` (package.json's `imports`: dist-devstack/; tsc: devstack/, or
 * dist-devstack/ in tools/tsconfig.build.json; jest: devstack/), checked alike.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..', '..');
const PREFIX = 'poimen-relay/internal/';
const DEVSTACK = '#devstack/';

function tsFiles(dir: string): string[] {
  return fs
    .readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)));
}

/** Every specifier starting with prefix written under the folders given. */
function specifiersIn(prefix: string, folders: string[]): string[] {
  const found = new Set<string>();
  for (const file of folders.flatMap(tsFiles)) {
    const { importedFiles } = ts.preProcessFile(fs.readFileSync(path.join(ROOT, file), 'utf8'), true, true);
    for (const { fileName } of importedFiles) if (fileName.startsWith(prefix)) found.add(fileName);
  }
  return [...found].sort();
}

/**
 * What Node resolves each specifier to, from inside a scratch copy of the package (relative to it) that holds an
 * empty built file per module: dist/ for src/, dist-devstack/devstack/ for devstack/.
 */
function resolveInScratchPackage(specifiers: string[]): Record<string, string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'internal-exports-'));
  try {
    fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
    const builds = [
      ...tsFiles('src').map((file) => path.join('dist', path.relative('src', file))),
      ...tsFiles('devstack').map((file) => path.join('dist-devstack', file)),
    ];
    for (const file of builds) {
      const built = path.join(dir, file.replace(/\.ts$/, '.js'));
      fs.mkdirSync(path.dirname(built), { recursive: true });
      fs.writeFileSync(built, '');
    }
    const probe = path.join(dir, 'probe.js');
    fs.writeFileSync(
      probe,
      `const path = require('node:path');
const out = {};
for (const s of JSON.parse(process.argv[2])) {
  try { out[s] = path.relative(__dirname, require.resolve(s)).split(path.sep).join('/'); }
  catch (e) { out[s] = e.code; }
}
process.stdout.write(JSON.stringify(out));`,
    );
    return JSON.parse(
      execFileSync(process.execPath, [probe, JSON.stringify(specifiers)], { encoding: 'utf8' }),
    ) as Record<string, string>;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const readJson = (file: string): Record<string, unknown> =>
  JSON.parse(fs.readFileSync(path.join(ROOT, file), 'utf8')) as Record<string, unknown>;
const pathsOf = (file: string): unknown =>
  (readJson(file).compilerOptions as { paths?: Record<string, unknown> }).paths;
/** Every jest project, the cluster's included. */
function jestConfigs(): { moduleNameMapper?: unknown }[] {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const jest = require('../../jest.config.js') as { projects: { moduleNameMapper?: unknown }[] };
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const cluster = require('../../jest.cluster.config.js') as { moduleNameMapper?: unknown };
  return [...jest.projects, cluster];
}

describe('poimen-relay/internal/*: the product as its built package', () => {
  const specifiers = specifiersIn(PREFIX, ['devstack', 'tools']);

  test('the dev stack and the tools use it', () => {
    expect(specifiers).toEqual(expect.arrayContaining([`${PREFIX}poll`, `${PREFIX}contract/index`]));
  });

  test('Node resolves every specifier written to the built module of a file under src/', () => {
    const got = resolveInScratchPackage([...specifiers, `${PREFIX}contract`]);
    const expected = Object.fromEntries(
      specifiers.map((s) => [s, `dist/${s.slice(PREFIX.length)}.js`] as const),
    );
    for (const s of specifiers)
      expect(fs.existsSync(path.join(ROOT, 'src', `${s.slice(PREFIX.length)}.ts`))).toBe(true);
    // A folder is not a module to exports (contract/index is): tsc's paths would accept it, Node does not.
    expect(got).toEqual({ ...expected, [`${PREFIX}contract`]: 'MODULE_NOT_FOUND' });
  });

  test('tsc, jest and package.json map the name to the same module', () => {
    const exported = (readJson('package.json').exports as Record<string, unknown>)['./internal/*'];
    expect(exported).toEqual({ types: './dist/*.d.ts', default: './dist/*.js' });
    expect(pathsOf('tsconfig.json')).toMatchObject({ 'poimen-relay/internal/*': ['./src/*'] });
    for (const build of ['devstack/tsconfig.build.json', 'tools/tsconfig.build.json'])
      expect(pathsOf(build)).toMatchObject({ 'poimen-relay/internal/*': ['../dist/*'] });
    for (const config of jestConfigs())
      expect(config.moduleNameMapper).toMatchObject({ '^poimen-relay/internal/(.*)$': '<rootDir>/src/$1' });
  });
});

describe('#devstack/*: the dev stack as its build, for the tools', () => {
  const specifiers = specifiersIn(DEVSTACK, ['tools']);

  test('the tools use it, and only the tools', () => {
    expect(specifiers).toEqual(expect.arrayContaining([`${DEVSTACK}config`, `${DEVSTACK}stack/profiles`]));
    expect(specifiersIn(DEVSTACK, ['src', 'devstack'])).toEqual([]);
  });

  test('Node resolves every specifier written to the built module of a file under devstack/', () => {
    const got = resolveInScratchPackage([...specifiers, `${DEVSTACK}stack`]);
    const expected = Object.fromEntries(
      specifiers.map((s) => [s, `dist-devstack/devstack/${s.slice(DEVSTACK.length)}.js`] as const),
    );
    for (const s of specifiers)
      expect(fs.existsSync(path.join(ROOT, 'devstack', `${s.slice(DEVSTACK.length)}.ts`))).toBe(true);
    expect(got).toEqual({ ...expected, [`${DEVSTACK}stack`]: 'MODULE_NOT_FOUND' });
  });

  test('tsc, jest and package.json map the name to the same module', () => {
    const imported = (readJson('package.json').imports as Record<string, unknown>)['#devstack/*'];
    expect(imported).toEqual({
      types: './dist-devstack/devstack/*.d.ts',
      default: './dist-devstack/devstack/*.js',
    });
    expect(pathsOf('tsconfig.json')).toEqual({
      'poimen-relay/internal/*': ['./src/*'],
      '#devstack/*': ['./devstack/*'],
    });
    // The tools' build reads the dev stack's declarations (its build emits them), the dev stack's build none.
    expect(pathsOf('tools/tsconfig.build.json')).toEqual({
      'poimen-relay/internal/*': ['../dist/*'],
      '#devstack/*': ['../dist-devstack/devstack/*'],
    });
    expect(pathsOf('devstack/tsconfig.build.json')).toEqual({ 'poimen-relay/internal/*': ['../dist/*'] });
    expect(
      (readJson('devstack/tsconfig.build.json').compilerOptions as { declaration?: boolean }).declaration,
    ).toBe(true);
    for (const config of jestConfigs())
      expect(config.moduleNameMapper).toEqual({
        '^poimen-relay/internal/(.*)$': '<rootDir>/src/$1',
        '^#devstack/(.*)$': '<rootDir>/devstack/$1',
      });
  });
});
