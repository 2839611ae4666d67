// @ts-check
/**
 * `npm run test:mutation [-- folder…]`: StrykerJS (stryker.config.mjs) over each folder that decides outcomes, one
 * run per folder so each keeps its own incremental file and report, then a table of the scores. Folders default
 * to all of them; `--list` prints their names. Owner of the mutation-testing habit: docs/reliability.md.
 */
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
/** @param {string} line */
const say = (line) => process.stdout.write(`${line}\n`);
/** @param {string} line */
const complain = (line) => process.stderr.write(`${line}\n`);
const strykerBin = path.join(
  path.dirname(require.resolve('@stryker-mutator/core/package.json')),
  'bin',
  'stryker.js',
);

/** @param {string} file @returns {{ killed: number, survived: number, noCoverage: number, timeout: number, errors: number, total: number } | null} */
function tally(file) {
  if (!fs.existsSync(file)) return null;
  const report = JSON.parse(fs.readFileSync(file, 'utf8'));
  const t = { killed: 0, survived: 0, noCoverage: 0, timeout: 0, errors: 0, total: 0 };
  for (const f of Object.values(report.files ?? {})) {
    for (const m of /** @type {{ status: string }[]} */ (f.mutants)) {
      t.total++;
      if (m.status === 'Killed') t.killed++;
      else if (m.status === 'Timeout') t.timeout++;
      else if (m.status === 'Survived') t.survived++;
      else if (m.status === 'NoCoverage') t.noCoverage++;
      else t.errors++; // CompileError, RuntimeError, Ignored, Pending: not in the score
    }
  }
  return t;
}

async function main() {
  const { MUTATED_FOLDERS } = await import(path.join(root, 'stryker.config.mjs'));
  const names = Object.keys(MUTATED_FOLDERS);
  const args = process.argv.slice(2);
  if (args.includes('--list')) {
    say(names.join('\n'));
    return;
  }
  const unknown = args.filter((a) => !names.includes(a));
  if (unknown.length > 0) {
    complain(`test:mutation: unknown folder ${unknown.join(', ')} (one of ${names.join(', ')})`);
    process.exit(2);
  }
  const chosen = args.length > 0 ? args : names;
  for (const folder of chosen) {
    say(`\n== mutation testing: ${folder} (${MUTATED_FOLDERS[folder].join(' ')})`);
    const run = spawnSync(process.execPath, [strykerBin, 'run'], {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, POIMEN_MUTATE_FOLDER: folder },
    });
    if (run.status !== 0) {
      complain(`test:mutation: stryker stopped on ${folder} (exit ${run.status ?? run.signal})`);
      process.exit(1);
    }
  }
  say('\nfolder       score  killed timeout survived no-coverage');
  for (const folder of names) {
    const t = tally(path.join(root, 'reports', 'mutation', `${folder}.json`));
    if (!t) continue;
    const detected = t.killed + t.timeout;
    const valid = detected + t.survived + t.noCoverage;
    const score = valid === 0 ? 'n/a' : `${((100 * detected) / valid).toFixed(1)} %`;
    say(
      `${folder.padEnd(12)} ${score.padStart(7)} ${String(t.killed).padStart(6)} ${String(t.timeout).padStart(7)}` +
        ` ${String(t.survived).padStart(8)} ${String(t.noCoverage).padStart(11)}`,
    );
  }
}

main().catch((err) => {
  complain(`test:mutation: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
