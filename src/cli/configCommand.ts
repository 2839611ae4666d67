/** `poimen-relay config`: the effective configuration of the ingester and the worker (config/effective.ts). */
import { Command, Option } from 'commander';
import { ROLE_READER, type ServiceRole, type Setting, explainRelayConfig } from '../config/effective';

const ROLES = Object.keys(ROLE_READER) as ServiceRole[];
const ROLE_OF: Readonly<Record<string, ServiceRole>> = { ingest: 'ingester', worker: 'worker' };

function table(role: ServiceRole, settings: Setting[]): string {
  const width = Math.max(...settings.map((s) => s.name.length)) + 2;
  const rows = settings.map((s) => `  ${s.name.padEnd(width)}${(s.value ?? '-').padEnd(24)} ${s.source}`);
  return `${role}:\n${rows.join('\n')}\n`;
}

export function configCommand(): Command {
  return new Command('config')
    .description(
      'print the effective configuration: every variable the ingester and the worker read, its value and where it came from (secrets: set or unset)',
    )
    .addOption(new Option('--role <role>', 'only this process').choices(Object.keys(ROLE_OF)))
    .option('--json', 'print JSON: {"<role>": [{name, value, source}]}')
    .action((opts: { role?: string; json?: boolean }) => {
      const roles = opts.role ? [ROLE_OF[opts.role]!] : ROLES;
      const explained = roles.map((role) => [role, explainRelayConfig(role).settings] as const);
      if (opts.json) process.stdout.write(`${JSON.stringify(Object.fromEntries(explained), null, 2)}\n`);
      else process.stdout.write(explained.map(([role, s]) => table(role, s)).join('\n'));
    });
}
