/** `poimen-relay ingest`: wiring only. */
import { Command } from 'commander';
import { createIngester } from '../ingest/createIngester';
import { serve } from './serve';

export function ingestCommand(): Command {
  return new Command('ingest')
    .description('drain dispatch topics into dispatch workflows')
    .action(() => serve('ingester', createIngester));
}
