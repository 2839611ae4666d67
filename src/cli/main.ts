/** The `poimen-relay` executable: wiring only; each command lives in its own module. */
import { Command, CommanderError } from 'commander';
import { EXIT, exitCodeOf, isUserFacingError } from '../errors';
import { VERSION } from '../version';
import { demoCommand } from './demoCommand';
import { dispatchCommand } from './dispatchCommand';
import { dlqCommand } from './dlqCommand';
import { ingestCommand } from './ingestCommand';
import { workerCommand } from './workerCommand';
import { stackCommand } from './stackCommands';
import { temporalCommand } from './temporalCommand';
import { topicsCommand } from './topicsCommand';

const program = new Command('poimen-relay')
  .description('Kafka dispatch topics -> one Temporal workflow per dispatch -> POST /v1/runs')
  .version(VERSION)
  .addCommand(ingestCommand())
  .addCommand(workerCommand())
  .addCommand(topicsCommand())
  .addCommand(temporalCommand())
  .addCommand(dlqCommand())
  .addCommand(dispatchCommand())
  .addCommand(stackCommand())
  .addCommand(demoCommand());

// Commander exits 1 on a usage error by itself; 1 means "not found" here, so it throws and is mapped below.
(function throwOnExit(cmd: Command): void {
  cmd.exitOverride();
  cmd.commands.forEach(throwOnExit);
})(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  // Commander has printed its one line (or the help, or the version) already.
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? EXIT.ok : EXIT.usage);
  // Configuration, usage and service problems are one clear line; anything else is a bug and keeps its stack.
  process.stderr.write(
    `poimen-relay: ${isUserFacingError(err) ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(exitCodeOf(err));
});
