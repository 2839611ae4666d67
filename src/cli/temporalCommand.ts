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
    .option('--json', 'print JSON: {namespace, registered, alreadyPresent}')
    .action(async (opts: { json?: boolean }) => {
      const { namespace, added } = await withTemporal(async (connection, cfg) => ({
        namespace: cfg.temporal.namespace,
        added: await ensureSearchAttributes(connection, cfg.temporal.namespace),
      }));
      const present = SEARCH_ATTRIBUTE_NAMES.filter((n) => !added.includes(n));
      if (opts.json) {
        const out = { namespace, registered: added, alreadyPresent: present };
        process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
        return;
      }
      process.stdout.write(
        `namespace ${namespace}: registered [${added.join(', ')}], already present [${present.join(', ')}]\n`,
      );
    });
  return temporal;
}
