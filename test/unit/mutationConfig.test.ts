/**
 * The mutation-testing setup (stryker.config.mjs, docs/reliability.md "Mutation testing") covers the modules that
 * decide a record's outcome, runs the unit project only (never the integration project's stack), and stays
 * incremental and light enough for the shared 2-core machine. The run itself is `npm run test:mutation`.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');

/** The config as StrykerJS loads it (an ES module: read in a child process, jest's VM does not import ESM). */
function strykerConfig(
  folder?: string,
  extraEnv: Record<string, string> = {},
): Record<string, unknown> & { folders: Record<string, string[]> } {
  const out = execFileSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      "const m = await import('./stryker.config.mjs'); console.log(JSON.stringify({ ...m.default, folders: m.MUTATED_FOLDERS }))",
    ],
    {
      cwd: root,
      env: { ...process.env, POIMEN_MUTATE_TYPECHECK: '', POIMEN_MUTATE_FOLDER: folder ?? '', ...extraEnv },
      encoding: 'utf8',
      stdio: 'pipe',
    },
  );
  return JSON.parse(out) as ReturnType<typeof strykerConfig>;
}

describe('mutation testing configuration', () => {
  const all = strykerConfig('all');

  test('mutates ingest, activities, workflows, kafka, the DLQ tools, the contract and the closes from visibility', () => {
    expect(all.folders).toEqual({
      ingest: ['src/ingest/**/*.ts'],
      activities: ['src/activities/**/*.ts'],
      workflows: ['src/workflows/**/*.ts'],
      kafka: ['src/kafka/**/*.ts'],
      'ops-dlq': ['src/ops/dlq*.ts'],
      contract: ['src/contract/**/*.ts'],
      'temporal-closes': [
        'src/temporal/visibilityCloses.ts',
        'src/temporal/visibilityStore.ts',
        'src/temporal/closedRuns.ts',
      ],
    });
    expect(all.mutate).toEqual(Object.values(all.folders).flat());
    expect(strykerConfig('contract').mutate).toEqual(['src/contract/**/*.ts']);
  });

  test('one folder per run keeps its own incremental file and report; an unknown folder is refused', () => {
    expect(strykerConfig('kafka')).toMatchObject({
      incremental: true,
      incrementalFile: 'test/mutation/kafka.incremental.json',
      jsonReporter: { fileName: 'reports/mutation/kafka.json' },
    });
    expect(() => strykerConfig('nope')).toThrow(/POIMEN_MUTATE_FOLDER=nope: not one of/);
  });

  test('runs only the unit files that import the mutated file, and only the tests that reach the mutant', () => {
    expect(all).toMatchObject({
      testRunner: 'jest',
      jest: { projectType: 'custom', configFile: 'jest.stryker.config.js', enableFindRelatedTests: true },
      coverageAnalysis: 'perTest',
    });
  });

  test('the TypeScript checker is off unless POIMEN_MUTATE_TYPECHECK=1 asks for it', () => {
    expect(all.checkers).toEqual([]);
    const checked = strykerConfig('all', { POIMEN_MUTATE_TYPECHECK: '1' });
    expect(checked).toMatchObject({ checkers: ['typescript'], tsconfigFile: 'tsconfig.build.json' });
  });

  test('stays light on the shared machine: at most 2 processes, the unit project only', () => {
    expect(all.concurrency).toBeLessThanOrEqual(2);
    expect(all.ignorePatterns).toEqual(expect.arrayContaining(['dist-tools', 'reports', '.stryker-tmp']));
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const jestConfig = require(path.join(root, 'jest.stryker.config.js')) as Record<string, unknown>;
    expect(jestConfig.roots).toEqual(['<rootDir>/test/unit', '<rootDir>/test/support']);
    expect(jestConfig.testMatch).toEqual(['**/*.test.ts']); // no test lives in test/support
    expect(jestConfig.projects).toBeUndefined();
    expect(jestConfig.globalSetup).toBeUndefined();
  });

  test('each committed incremental record names only files that exist, sources in its own folder', () => {
    const dir = path.join(root, 'test', 'mutation');
    const asRegExp = (glob: string) =>
      new RegExp(
        `^${glob
          .replace(/[.]/g, '\\.')
          .replace(/\*\*\//g, '(.+/)?')
          .replace(/\*/g, '[^/]*')}$`,
      );
    const records = fs.readdirSync(dir).filter((f) => f.endsWith('.incremental.json'));
    expect(records.length).toBeGreaterThan(0);
    for (const file of records) {
      const folder = file.replace(/\.incremental\.json$/, '');
      expect(Object.keys(all.folders)).toContain(folder);
      const globs = all.folders[folder]!.map(asRegExp);
      const record = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as {
        files: Record<string, unknown>;
        testFiles: Record<string, unknown>;
      };
      for (const source of Object.keys(record.files)) {
        expect({ file, source, exists: fs.existsSync(path.join(root, source)) }).toEqual({
          file,
          source,
          exists: true,
        });
        expect(globs.some((g) => g.test(source))).toBe(true);
      }
      for (const test of Object.keys(record.testFiles))
        expect({ file, test, exists: fs.existsSync(path.join(root, test)) }).toEqual({
          file,
          test,
          exists: true,
        });
    }
  });
});
