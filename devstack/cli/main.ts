/** The `poimen-dev` executable (devstack/bin/poimen-dev.js): wiring only; the command tree is ./program.ts. */
import { Command, CommanderError } from 'commander';
import { EXIT, exitCodeOf, failureText } from 'poimen-relay/internal/errors';
import { dropKafkaTimerWarnings } from 'poimen-relay/internal/kafka/nodeWarnings';
import { buildDevProgram } from './program';

// The stack commands and the demo use kafkajs too (src/kafka/nodeWarnings.ts).
dropKafkaTimerWarnings();

const program = buildDevProgram();

// Commander exits 1 on a usage error by itself; 1 means "not ready" here, so it throws and is mapped below.
(function throwOnExit(cmd: Command): void {
  cmd.exitOverride();
  cmd.commands.forEach(throwOnExit);
})(program);

program.parseAsync(process.argv).catch((caught: unknown) => {
  if (caught instanceof CommanderError) process.exit(caught.exitCode === 0 ? EXIT.ok : EXIT.usage);
  // A missing host tool or a service that cannot start is one clear line; anything else keeps its stack.
  process.stderr.write(`poimen-dev: ${failureText(caught)}\n`);
  process.exit(exitCodeOf(caught));
});
