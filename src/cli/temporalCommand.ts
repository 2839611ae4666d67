/** `poimen-relay temporal setup`: wiring only. */
import { Command } from 'commander';
import { loadRelayConfig } from '../config';
import { SEARCH_ATTRIBUTE_NAMES } from '../contract';
import { createClientConnection } from '../temporal/connection';
import { ensureSearchAttributes } from '../temporal/searchAttributes';

export function temporalCommand(): Command {
  const temporal = new Command('temporal').description('Temporal namespace setup');
  temporal
    .command('setup')
    .description(
      `register the Keyword search attributes ${SEARCH_ATTRIBUTE_NAMES.join(', ')} on the namespace (idempotent)`,
    )
    .action(async () => {
      const cfg = loadRelayConfig('cli');
      const connection = createClientConnection(cfg.temporal);
      try {
        const added = await ensureSearchAttributes(connection, cfg.temporal.namespace);
        const present = SEARCH_ATTRIBUTE_NAMES.filter((n) => !added.includes(n));
        process.stdout.write(
          `namespace ${cfg.temporal.namespace}: registered [${added.join(', ')}], already present [${present.join(', ')}]\n`,
        );
      } finally {
        await connection.close();
      }
    });
  return temporal;
}
