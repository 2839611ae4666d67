/** `poimen-relay worker`: wiring only. */
import { Command } from 'commander';
import { createWorker } from '../worker/createWorker';
import { serve } from './serve';

export function workerCommand(): Command {
  return new Command('worker')
    .description('run a Temporal worker for the dispatch workflow')
    .action(() => serve('worker', createWorker));
}
