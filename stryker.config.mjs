// @ts-check
/**
 * Mutation testing of the modules that decide a record's outcome (docs/reliability.md, "Mutation testing"):
 * StrykerJS changes one expression at a time and runs the unit tests that cover it; a change no test notices
 * (a surviving mutant) is a behaviour no test states. Run it with `npm run test:mutation` (scripts/mutation.js,
 * one folder at a time). Slow (tens of minutes per folder on 2 cores): not part of `npm test` or .ci/run.
 */

/** The folders that decide outcomes; scripts/mutation.js runs them one by one, test/unit/mutationConfig checks. */
export const MUTATED_FOLDERS = {
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
};

/** POIMEN_MUTATE_FOLDER names one folder (scripts/mutation.js); unset, the run covers them all. */
const folder = process.env.POIMEN_MUTATE_FOLDER || 'all';
const globs = folder === 'all' ? Object.values(MUTATED_FOLDERS).flat() : MUTATED_FOLDERS[folder];
if (!globs) {
  throw new Error(
    `POIMEN_MUTATE_FOLDER=${folder}: not one of ${Object.keys(MUTATED_FOLDERS).join(', ')}, all`,
  );
}

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
const config = {
  mutate: globs,
  testRunner: 'jest',
  // Per-test coverage gives each mutant the names of the tests that reach it; findRelatedTests gives jest the
  // files that import the mutated file. Without it every mutant's run loaded all the unit files (their imports:
  // Temporal, kafkajs, undici) only to skip most of their tests: that load, not the tests, was the cost per mutant.
  jest: { projectType: 'custom', configFile: 'jest.stryker.config.js', enableFindRelatedTests: true },
  coverageAnalysis: 'perTest',
  // No TypeScript checker: on the shared 2-core machine it was most of the time per mutant (its type check of each
  // mutant group took longer than the mutant's tests; the test runner sat idle waiting for it). All it does is
  // leave out mutants that do not compile; without it they run (swc strips types) and count like any other: a
  // killed one raises the score, a surviving one lowers it. POIMEN_MUTATE_TYPECHECK=1 puts it back for one run.
  checkers: process.env.POIMEN_MUTATE_TYPECHECK === '1' ? ['typescript'] : [],
  // The checker, when on, compiles the product (src/) only: a mutant changes src/ alone.
  tsconfigFile: 'tsconfig.build.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  // The machine is shared (2 cores): two test runners, run under `nice -n 19` (docs/reliability.md); with the
  // checker on, one checker and one runner.
  concurrency: 2,
  // Only the mutants of changed code or changed tests run again. One file per folder (a run rewrites its file
  // with its own mutants only), committed so the next run starts from the last one (docs/reliability.md).
  incremental: true,
  incrementalFile: `test/mutation/${folder}.incremental.json`,
  // The sandbox is a copy of the project: never the tools' build, reports or earlier sandboxes (node_modules is
  // linked, not copied). dist/ (a few MB) is copied: the CLI tests spawn it; built from the unmutated source,
  // they only have to pass.
  ignorePatterns: ['dist-tools', 'dist-devstack', 'reports', 'coverage', 'test-artifacts', '.stryker-tmp'],
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
  reporters: ['clear-text', 'progress-append-only', 'html', 'json'],
  htmlReporter: { fileName: `reports/mutation/${folder}.html` },
  jsonReporter: { fileName: `reports/mutation/${folder}.json` },
  thresholds: { high: 85, low: 70, break: null },
  // The whole unit project runs once with coverage first: minutes on a busy 2-core machine.
  dryRunTimeoutMinutes: 40,
  timeoutMS: 10_000,
  timeoutFactor: 2,
};

export default config;
