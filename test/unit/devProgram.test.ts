/**
 * The dev stack's commands (devstack/cli) apart from the relay's: `poimen-dev stack …` and `demo` list the dev
 * stack's variables (devstack/envTable.ts, documented in devstack/README.md with their defaults), and the relay's
 * CLI, asked for them, says in one line where they are now (exit 2) instead of running or crashing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { Command } from 'commander';
import { buildDevProgram } from '../../devstack/cli/program';
import { loadStackConfig } from '../../devstack/config';
import { STACK_ENV_VARS } from '../../devstack/envTable';
import { movedCommand } from '../../src/cli/movedCommands';
import { buildProgram } from '../../src/cli/program';

function leaves(cmd: Command, at: string[] = []): [string, Command][] {
  if (cmd.commands.length === 0) return [[at.join(' '), cmd]];
  return cmd.commands.flatMap((c) => leaves(c, [...at, c.name()]));
}

test('the dev entry has the stack and demo commands; up and status offer --json; each help lists the variables', () => {
  const all = leaves(buildDevProgram());
  expect(all.map(([p]) => p).sort()).toEqual([
    'demo',
    'stack down',
    'stack provision',
    'stack status',
    'stack up',
  ]);
  for (const [p, cmd] of all) {
    let help = '';
    cmd.configureOutput({ writeOut: (text) => (help += text) });
    cmd.outputHelp();
    const missing = STACK_ENV_VARS.map((v) => v.name).filter((n) => !help.includes(n));
    expect({ p, missing }).toEqual({ p, missing: [] });
    const json = cmd.options.some((o) => o.long === '--json');
    expect({ p, json }).toEqual({ p, json: p === 'stack up' || p === 'stack status' });
  }
});

test("the relay's CLI has neither command any more", () => {
  expect(buildProgram().commands.map((c) => c.name())).toEqual(expect.not.arrayContaining(['stack', 'demo']));
});

test('devstack/README.md gives every variable of the dev stack, with the loader’s literal defaults', () => {
  const doc = fs.readFileSync(path.join(__dirname, '..', '..', 'devstack', 'README.md'), 'utf8');
  const rows = doc
    .split('\n')
    .map((l) => /^\| `([A-Z][A-Z0-9_]+)` +\| ([^|]+?) +\|/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null);
  expect(rows.map((m) => m[1]).sort()).toEqual(STACK_ENV_VARS.map((v) => v.name).sort());
  const baseline = loadStackConfig({});
  const literal = rows
    .map((m) => [m[1]!, /^`([^`]+)`$/.exec(m[2]!)?.[1]] as const)
    .filter((r): r is readonly [string, string] => r[1] !== undefined);
  expect(literal.length).toBeGreaterThan(10);
  const wrong = literal.filter(
    ([name, value]) => !isDeepStrictEqual(loadStackConfig({ [name]: value }), baseline),
  );
  expect(wrong).toEqual([]);
});

describe('`poimen-relay stack …` and `poimen-relay demo`', () => {
  test('are named as moved, with the dev entry to run; other words are not', () => {
    for (const args of [['stack', 'up'], ['stack'], ['demo'], ['stack', 'down', '--profile', 'cluster']]) {
      expect(movedCommand(args)).toMatch(
        /^'(stack|demo)' is not a relay command: .*node devstack\/bin\/poimen-dev\.js/,
      );
    }
    for (const args of [[], ['worker'], ['dlq', 'list'], ['--help'], ['toString'], ['constructor']]) {
      expect(movedCommand(args)).toBeUndefined();
    }
  });
});
