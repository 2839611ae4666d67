/**
 * The `poimen-dev` command tree: the local dev stack (`stack provision|up|down|status`) and the demo, apart from
 * the relay's CLI (src/cli/program.ts never imports the dev stack). Every help lists the dev stack's variables
 * (devstack/envTable.ts) and ends with the exit codes the relay's CLI uses too.
 */
import { Command } from 'commander';
import { exitCodesHelp } from 'poimen-relay/internal/cli/conventions';
import { STACK_ENV_VARS } from '../envTable';
import { demoCommand } from './demoCommand';
import { stackCommand } from './stackCommands';

function envHelp(): string {
  const width = Math.max(...STACK_ENV_VARS.map((v) => v.name.length)) + 2;
  const rows = STACK_ENV_VARS.map((v) => `  ${v.name.padEnd(width)}${v.description}`);
  return `\nEnvironment (defaults in devstack/README.md):\n${rows.join('\n')}`;
}

export function buildDevProgram(): Command {
  const program = new Command('poimen-dev')
    .description('the local Kafka + Temporal stack and the demo, for development and tests (not the relay)')
    .addCommand(stackCommand())
    .addCommand(demoCommand());
  program.addHelpText('afterAll', exitCodesHelp());
  (function walk(cmd: Command): void {
    if (cmd.commands.length === 0) cmd.addHelpText('after', envHelp());
    cmd.commands.forEach(walk);
  })(program);
  return program;
}
