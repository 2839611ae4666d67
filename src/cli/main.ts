/** The `poimen-relay` executable: wiring only; the command tree is src/cli/program.ts. */
import { Command, CommanderError } from 'commander';
import { EXIT, exitCodeOf, failureText } from '../errors';
import { dropKafkaTimerWarnings } from '../kafka/nodeWarnings';
import { nameTheFlag } from './conventions';
import { movedCommand } from './movedCommands';
import { buildProgram } from './program';

dropKafkaTimerWarnings();

const moved = movedCommand(process.argv.slice(2));
if (moved !== undefined) {
  process.stderr.write(`poimen-relay: ${moved}\n`);
  process.exit(EXIT.usage);
}

const program = buildProgram();

// Commander exits 1 on a usage error by itself; 1 means "not found" here, so it throws and is mapped below.
(function throwOnExit(cmd: Command): void {
  cmd.exitOverride();
  cmd.commands.forEach(throwOnExit);
})(program);

program.parseAsync(process.argv).catch((caught: unknown) => {
  // Commander has printed its one line (or the help, or the version) already.
  if (caught instanceof CommanderError) process.exit(caught.exitCode === 0 ? EXIT.ok : EXIT.usage);
  const err = nameTheFlag(caught);
  // Configuration, usage and service problems are one clear line; anything else is a bug and keeps its stack.
  process.stderr.write(`poimen-relay: ${failureText(err)}\n`);
  process.exit(exitCodeOf(err));
});
