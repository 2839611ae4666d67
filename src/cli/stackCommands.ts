import { Command } from 'commander';
import { loadStackConfig } from '../config';
import { EXIT } from '../errors';
import { consoleProgress } from '../devstack/stack/progress';
import { provision } from '../devstack/stack/provision';
import { LocalStack, type ServiceStatus } from '../devstack/stack/stack';

export function printStatus(statuses: ServiceStatus[]): void {
  for (const s of statuses) {
    const state = s.ready ? 'ready' : s.running ? 'running, not ready' : 'down';
    process.stdout.write(`${s.name.padEnd(9)} ${state.padEnd(19)} ${s.detail}\n`);
  }
}

export function stackCommand(): Command {
  const stack = new Command('stack').description(
    'the local Kafka (KRaft) + Temporal dev server stack for development and tests',
  );

  stack
    .command('provision')
    .description('download Kafka jars and build the temporal CLI into the cache, without starting anything')
    .option('--tctl', 'also build tctl (the archived Temporal CLI; minutes the first time)')
    .action(async (opts: { tctl?: boolean }) => {
      await provision(loadStackConfig(), consoleProgress(), { tctl: opts.tctl === true });
    });

  stack
    .command('up')
    .description('provision (cached) and start Kafka and Temporal; harmless when already up')
    .option('--json', 'print the services as JSON, as `stack status --json` does')
    .action(async (opts: { json?: boolean }) => {
      const cfg = loadStackConfig();
      const statuses = await new LocalStack(cfg, consoleProgress()).up();
      if (opts.json) process.stdout.write(`${JSON.stringify(statuses, null, 2)}\n`);
      else {
        printStatus(statuses);
        process.stdout.write(`state and logs: ${cfg.stateDir}\n`);
      }
    });

  stack
    .command('down')
    .description('stop the processes the stack started')
    .action(async () => {
      await new LocalStack(loadStackConfig(), consoleProgress()).down();
    });

  stack
    .command('status')
    .description('report each service; exits 1 when one is not ready')
    .option('--json', 'print JSON: [{name, address, detail, running, ready, log}]')
    .action(async (opts: { json?: boolean }) => {
      const statuses = await new LocalStack(loadStackConfig()).status();
      if (opts.json) process.stdout.write(`${JSON.stringify(statuses, null, 2)}\n`);
      else printStatus(statuses);
      if (!statuses.every((s) => s.ready)) process.exitCode = EXIT.notFound;
    });

  return stack;
}
