/** The `poimen-relay` command tree: each command lives in its own module; the shared conventions are applied here. */
import { Command } from 'commander';
import { VERSION } from '../version';
import { configCommand } from './configCommand';
import { applyConventions } from './conventions';
import { dispatchCommand } from './dispatchCommand';
import { dlqCommand } from './dlqCommand';
import { dlqSummaryCommand } from './dlqSummaryCommand';
import { ingestCommand } from './ingestCommand';
import { workerCommand } from './workerCommand';
import { temporalCommand } from './temporalCommand';
import { tenantCommand } from './tenantCommand';
import { topicsCommand } from './topicsCommand';

export function buildProgram(): Command {
  const program = new Command('poimen-relay')
    .description('Kafka dispatch topics -> one Temporal workflow per dispatch -> POST /v1/runs')
    .version(VERSION)
    .addCommand(ingestCommand())
    .addCommand(workerCommand())
    .addCommand(configCommand())
    .addCommand(topicsCommand())
    .addCommand(temporalCommand())
    .addCommand(dlqCommand().addCommand(dlqSummaryCommand()))
    .addCommand(dispatchCommand())
    .addCommand(tenantCommand());
  applyConventions(program);
  return program;
}
