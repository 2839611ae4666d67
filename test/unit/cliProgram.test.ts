/**
 * The conventions are applied by command path (src/cli/conventions.ts): a command added later must be named
 * there, or it would silently list no environment and take no override flags.
 */
import type { Command } from 'commander';
import { COMMAND_READERS } from '../../src/cli/conventions';
import { buildProgram } from '../../src/cli/program';
import { ConfigError } from '../../src/errors';

function leafPaths(cmd: Command, path: string[] = []): string[] {
  if (cmd.commands.length === 0) return [path.join(' ')];
  return cmd.commands.flatMap((c) => leafPaths(c, [...path, c.name()]));
}

test('every command is named in COMMAND_READERS, and every name there is a command', () => {
  expect(leafPaths(buildProgram()).sort()).toEqual(Object.keys(COMMAND_READERS).sort());
});

test('every command that reports a result offers --json', () => {
  const program = buildProgram();
  const find = (path: string[]) =>
    path.reduce<Command | undefined>((cmd, name) => cmd?.commands.find((c) => c.name() === name), program);
  const reporting = [
    'topics apply',
    'topics list',
    'temporal setup',
    'dlq list',
    'dlq replay',
    'dlq redrive',
    'dlq discard',
    'dlq send-test',
    'dlq purge-tests',
    'dlq summary',
    'dispatch status',
  ];
  const withJson = reporting.filter((p) => find(p.split(' '))?.options.some((o) => o.long === '--json'));
  expect(withJson).toEqual(reporting);
});

test('an empty flag is refused before the command runs, not taken for "use the default"', async () => {
  const program = buildProgram();
  await expect(
    program.parseAsync(['topics', 'list', '--kafka-brokers', ' '], { from: 'user' }),
  ).rejects.toThrow(new ConfigError('--kafka-brokers', 'must not be empty'));
});
