/** `poimen-relay temporal setup`: wiring only. */
import { Command } from 'commander';
import { SEARCH_ATTRIBUTE_NAMES } from '../contract';
import { ensureSearchAttributes } from '../temporal/searchAttributes';
import { withTemporal } from './temporalConnection';

export function temporalCommand(): Command {
  const temporal = new Command('temporal').description('Temporal namespace setup');
  temporal
    .command('setup')
    .description(
      `register the Keyword search attributes ${SEARCH_ATTRIBUTE_NAMES.join(', ')} on the namespace (idempotent)`,
    )
    .action(async () => {
      const { namespace, added } = await withTemporal(async (connection, cfg) => ({
        namespace: cfg.temporal.namespace,
        added: await ensureSearchAttributes(connection, cfg.temporal.namespace),
      }));
      const present = SEARCH_ATTRIBUTE_NAMES.filter((n) => !added.includes(n));
      process.stdout.write(
        `namespace ${namespace}: registered [${added.join(', ')}], already present [${present.join(', ')}]\n`,
      );
    });
  return temporal;
}
