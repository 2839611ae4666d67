/**
 * The commit message convention `npm run lint` holds (scripts/commitMessages.js, CONTRIBUTING.md): a subject of
 * at most 72 characters, a blank line, a body; a merge needs only the subject; commits up to the recorded
 * cutoff are exempt.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { MAX_SUBJECT, messageProblems, checkRange } = require('../../scripts/commitMessages.js') as {
  MAX_SUBJECT: number;
  messageProblems: (m: string, o?: { merge?: boolean; stripComments?: boolean }) => string[];
  checkRange: (base: string, cwd?: string) => { code: number; lines: string[] };
};

describe('one commit message', () => {
  it('passes with a subject, a blank line and a body', () => {
    expect(messageProblems('Fix the thing\n\nWhy, and what was tested.\n')).toEqual([]);
  });

  it(`accepts a subject of exactly ${MAX_SUBJECT} characters and refuses one more`, () => {
    expect(messageProblems(`${'a'.repeat(MAX_SUBJECT)}\n\nbody`)).toEqual([]);
    expect(messageProblems(`${'a'.repeat(MAX_SUBJECT + 1)}\n\nbody`)).toEqual([
      `the subject has ${MAX_SUBJECT + 1} characters (at most ${MAX_SUBJECT})`,
    ]);
  });

  it('refuses a message with no body, or a body glued to the subject', () => {
    expect(messageProblems('Fix the thing\n')).toEqual([
      'there is no body (a blank line, then why and what was tested)',
    ]);
    expect(messageProblems('Fix the thing\nwhy\n')).toContain('the second line is not blank');
    expect(messageProblems('\n\nbody')).toEqual(['the subject is empty']);
  });

  it('lets a merge go without a body, never with a long subject', () => {
    expect(messageProblems("Merge branch 'docs-house'\n", { merge: true })).toEqual([]);
    expect(messageProblems(`Merge ${'x'.repeat(80)}\n`, { merge: true })).toHaveLength(1);
  });

  it("drops git's comment lines only in a message from the editor (the hook)", () => {
    const edited = 'Fix the thing\n\n# Please enter the commit message\n';
    expect(messageProblems(edited, { stripComments: true })).toHaveLength(1);
    expect(messageProblems(edited)).toEqual([]);
  });
});

describe('the commits after the cutoff', () => {
  let repo: string;
  const git = (...args: string[]): string =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
      cwd: repo,
      encoding: 'utf8',
    }).trim();
  const commit = (message: string): string => {
    git('commit', '--allow-empty', '-q', '--cleanup=verbatim', '-m', message);
    return git('rev-parse', 'HEAD');
  };

  beforeEach(() => {
    repo = fs.mkdtempSync(path.join(os.tmpdir(), 'commit-msgs-'));
    git('init', '-q', '-b', 'main');
  });
  afterEach(() => fs.rmSync(repo, { recursive: true, force: true }));

  it('exempts the history up to the cutoff and names each later commit that breaks the rule', () => {
    commit('an old subject with no body that nobody checks any more');
    const base = commit('The cutoff\n\nbody');
    expect(checkRange(base, repo)).toEqual({ code: 0, lines: [] });
    commit('A good one\n\nwith a body');
    const bad = commit('A bad one with no body');
    const result = checkRange(base, repo);
    expect(result.code).toBe(1);
    expect(result.lines[0]).toBe(
      `${bad.slice(0, 12)} "A bad one with no body": there is no body (a blank line, then why and what was tested)`,
    );
    expect(result.lines).toHaveLength(2);
  });

  /** The cutoff, then a topic branch merged into main with git's default message; returns the cutoff. */
  const cutoffThenMerge = (): string => {
    const base = commit('The cutoff\n\nbody');
    git('checkout', '-q', '-b', 'topic');
    commit('Topic work\n\nbody');
    git('checkout', '-q', 'main');
    commit('Main work\n\nbody');
    git('merge', '-q', '--no-ff', '--no-edit', 'topic');
    return base;
  };
  /** A `--depth` clone of the test repo, removed after `use`. */
  const inShallowClone = (depth: number, use: (clone: string) => void): void => {
    const shallow = fs.mkdtempSync(path.join(os.tmpdir(), 'commit-msgs-shallow-'));
    try {
      execFileSync('git', ['clone', '-q', '--depth', String(depth), `file://${repo}`, shallow]);
      use(shallow);
    } finally {
      fs.rmSync(shallow, { recursive: true, force: true });
    }
  };

  it('lets a merge of a branch through with its default message', () => {
    const base = cutoffThenMerge();
    expect(git('log', '-1', '--format=%s')).toBe("Merge branch 'topic'");
    expect(checkRange(base, repo)).toEqual({ code: 0, lines: [] });
  });

  it('checks every commit a shallow clone holds when the cutoff is older than its history', () => {
    const base = commit('The cutoff\n\nbody');
    commit('Work after the cutoff\n\nbody');
    commit('More work\n\nbody');
    inShallowClone(2, (shallow) => {
      expect(checkRange(base, shallow)).toEqual({
        code: 0,
        lines: [`commit messages: ${base} is older than this shallow clone; checked every commit it holds`],
      });
      commit('A later one with no body');
      execFileSync('git', ['fetch', '-q', '--depth', '2', 'origin', 'main'], { cwd: shallow });
      execFileSync('git', ['reset', '-q', '--hard', 'FETCH_HEAD'], { cwd: shallow });
      const result = checkRange(base, shallow);
      expect(result.code).toBe(1);
      expect(result.lines[1]).toContain('"A later one with no body": there is no body');
    });
  });

  it("takes a shallow clone's oldest commit as the merge it is", () => {
    const base = cutoffThenMerge();
    inShallowClone(1, (shallow) => expect(checkRange(base, shallow).code).toBe(0));
  });

  it('stops with one line when the cutoff is not in the clone', () => {
    commit('The only commit\n\nbody');
    expect(checkRange('0123456789abcdef0123456789abcdef01234567', repo)).toEqual({
      code: 2,
      lines: ['commit messages: the base 0123456789abcdef0123456789abcdef01234567 is not in this clone'],
    });
  });
});
