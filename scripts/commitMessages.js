// @ts-check
/**
 * The commit message convention (CONTRIBUTING.md), checked by `npm run lint`: a subject of at most 72
 * characters, a blank line, then a body. A merge commit needs only the subject (the commits it brings carry
 * their own bodies). Checked are the commits HEAD has and the cutoff commit recorded in
 * scripts/commitMessages.base has not (`git rev-list <base>..HEAD`), so older history is exempt and a fresh CI
 * clone, which has no upstream branch to compare with, checks the same commits as a developer's clone.
 * A shallow clone whose history begins after the cutoff has only newer commits: all of them are checked.
 *
 * node scripts/commitMessages.js                  the commits after the recorded cutoff
 * node scripts/commitMessages.js --base <rev>     the commits after <rev> (also COMMIT_MSG_BASE=<rev>)
 * node scripts/commitMessages.js --file <path>    one message file (the commit-msg hook in .githooks/)
 */
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const MAX_SUBJECT = 72;
const BASE_FILE = path.join(__dirname, 'commitMessages.base');

/**
 * What is wrong with one commit message, or [] when nothing is. Lines starting with '#' are git's comments
 * when the message comes from an editor (`--file`); stored messages are taken as they are.
 * @param {string} message
 * @param {{ merge?: boolean, stripComments?: boolean }} [opts]
 * @returns {string[]}
 */
function messageProblems(message, opts = {}) {
  let lines = message.replace(/\r\n/g, '\n').split('\n');
  if (opts.stripComments) lines = lines.filter((l) => !l.startsWith('#'));
  while (lines.length > 0 && (lines[lines.length - 1] ?? '').trim() === '') lines.pop();
  const subject = lines[0] ?? '';
  const problems = [];
  if (subject.trim() === '') return ['the subject is empty'];
  if (subject.length > MAX_SUBJECT)
    problems.push(`the subject has ${subject.length} characters (at most ${MAX_SUBJECT})`);
  if ((lines[1] ?? '').trim() !== '') problems.push('the second line is not blank');
  const body = lines.slice(2).join('\n').trim();
  if (body === '' && !opts.merge)
    problems.push('there is no body (a blank line, then why and what was tested)');
  return problems;
}

/** @param {string[]} args @param {string} [cwd] @returns {{ ok: boolean, out: string }} */
function git(args, cwd) {
  const r = spawnSync('git', args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return {
    ok: r.status === 0,
    out: r.status === 0 ? r.stdout : `${r.stderr ?? ''}${r.error?.message ?? ''}`,
  };
}

/** The recorded cutoff: the first line of scripts/commitMessages.base that is not a comment. */
function recordedBase() {
  const line = fs
    .readFileSync(BASE_FILE, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l !== '' && !l.startsWith('#'));
  if (!line) throw new Error(`${BASE_FILE} names no commit`);
  return line;
}

/**
 * Every commit of `base..HEAD` with its problems; exit code 0 when none has any.
 * @param {string} base
 * @param {string} [cwd]
 * @returns {{ code: number, lines: string[] }}
 */
function checkRange(base, cwd) {
  if (!git(['rev-parse', '--is-inside-work-tree'], cwd).ok)
    return { code: 0, lines: ['commit messages: not a git checkout, no history to check'] };
  const notes = [];
  let range = `${base}..HEAD`;
  if (!git(['cat-file', '-e', `${base}^{commit}`], cwd).ok) {
    // A shallow clone (CI's --depth) whose history starts after the cutoff: every commit it holds is newer.
    if (git(['rev-parse', '--is-shallow-repository'], cwd).out.trim() !== 'true')
      return { code: 2, lines: [`commit messages: the base ${base} is not in this clone`] };
    notes.push(`commit messages: ${base} is older than this shallow clone; checked every commit it holds`);
    range = 'HEAD';
  }
  const list = git(['rev-list', '--parents', range], cwd);
  if (!list.ok) return { code: 2, lines: [`commit messages: git rev-list failed: ${list.out.trim()}`] };
  const lines = [];
  for (const row of list.out.split('\n').filter(Boolean)) {
    const [sha = ''] = row.split(' ');
    // The commit object's own parent lines: a shallow clone's rev-list shows its oldest commits without parents.
    const object = git(['cat-file', '-p', sha], cwd);
    if (!object.ok) return { code: 2, lines: [`commit messages: cannot read ${sha}: ${object.out.trim()}`] };
    const header = object.out.split('\n\n')[0] ?? '';
    const parents = header.split('\n').filter((l) => l.startsWith('parent '));
    const body = git(['log', '-1', '--format=%B', sha], cwd);
    if (!body.ok) return { code: 2, lines: [`commit messages: cannot read ${sha}: ${body.out.trim()}`] };
    const problems = messageProblems(body.out, { merge: parents.length > 1 });
    const subject = body.out.split('\n')[0];
    for (const p of problems) lines.push(`${sha.slice(0, 12)} "${subject}": ${p}`);
  }
  return lines.length === 0
    ? { code: 0, lines: notes }
    : {
        code: 1,
        lines: [
          ...notes,
          ...lines,
          'commit messages: see CONTRIBUTING.md; reword with git rebase -i before merging',
        ],
      };
}

/** @param {string[]} argv @param {NodeJS.ProcessEnv} env */
function main(argv, env) {
  /** @param {string} flag */
  const at = (flag) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const file = at('--file');
  if (file !== undefined) {
    const problems = messageProblems(fs.readFileSync(file, 'utf8'), {
      stripComments: true,
      merge: fs.existsSync(path.join(git(['rev-parse', '--git-dir']).out.trim(), 'MERGE_HEAD')),
    });
    return { code: problems.length ? 1 : 0, lines: problems.map((p) => `commit message: ${p}`) };
  }
  return checkRange(at('--base') ?? env.COMMIT_MSG_BASE ?? recordedBase());
}

if (require.main === module) {
  const { code, lines } = main(process.argv.slice(2), process.env);
  for (const l of lines) (code === 0 ? process.stdout : process.stderr).write(`${l}\n`);
  process.exit(code);
}

module.exports = { MAX_SUBJECT, messageProblems, checkRange };
