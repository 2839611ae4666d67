import { Command, Option } from 'commander';
import { type StackConfig, loadStackConfig } from '../config';
import { EXIT } from 'poimen-relay/internal/errors';
import { consoleProgress } from '../stack/progress';
import { ensureKafkaTools, provision } from '../stack/provision';
import { provisionCluster } from '../stack/provisionCluster';
import { STACK_PROFILES, type StackProfile, openStack, stackEndpoints } from '../stack/profiles';
import type { ServiceStatus } from '../stack/stack';

export function printStatus(statuses: ServiceStatus[]): void {
  for (const s of statuses) {
    const state = s.ready ? 'ready' : s.running ? 'running, not ready' : 'down';
    process.stdout.write(`${s.name.padEnd(9)} ${state.padEnd(19)} ${s.detail}\n`);
  }
}

/** `--json` of `up` and `status`: where to point the relay (KAFKA_BROKERS, TEMPORAL_ADDRESS) and each service. */
function statusJson(cfg: StackConfig, profile: StackProfile, services: ServiceStatus[]): string {
  return `${JSON.stringify({ ...stackEndpoints(cfg, profile), services }, null, 2)}\n`;
}

const profileOption = () =>
  new Option(
    '--profile <profile>',
    'dev: one broker + the temporal dev server; cluster: PostgreSQL + Temporal server (8 shards) + 3 brokers',
  )
    .choices(STACK_PROFILES)
    .default('dev');

export function stackCommand(): Command {
  const stack = new Command('stack').description(
    'the local Kafka (KRaft) + Temporal stack for development and tests, as a dev server or a cluster',
  );

  stack
    .command('provision')
    .description(
      'download Kafka jars and build the Temporal binaries into the cache, without starting anything',
    )
    .addOption(profileOption())
    .option('--tctl', 'also build tctl (the archived Temporal CLI; minutes the first time)')
    .option(
      '--kafka-tools',
      "also download Kafka's command-line tools (what deploy/scripts/create-topics.sh runs) into the cache",
    )
    .action(async (opts: { tctl?: boolean; kafkaTools?: boolean; profile: StackProfile }) => {
      const cfg = loadStackConfig();
      if (opts.profile === 'cluster') await provisionCluster(cfg, consoleProgress());
      else await provision(cfg, consoleProgress(), { tctl: opts.tctl === true });
      if (opts.kafkaTools) await ensureKafkaTools(cfg, consoleProgress());
    });

  stack
    .command('up')
    .description("provision (cached) and start the profile's services; harmless when already up")
    .addOption(profileOption())
    .option('--json', 'print the endpoints and services as JSON, as `stack status --json` does')
    .action(async (opts: { json?: boolean; profile: StackProfile }) => {
      const cfg = loadStackConfig();
      const s = openStack(cfg, opts.profile, consoleProgress());
      const statuses = await s.up();
      if (opts.json) process.stdout.write(statusJson(cfg, opts.profile, statuses));
      else {
        printStatus(statuses);
        process.stdout.write(`state and logs: ${s.stateDir}\n`);
      }
    });

  stack
    .command('down')
    .description('stop the processes the stack started')
    .addOption(profileOption())
    .action(async (opts: { profile: StackProfile }) => {
      await openStack(loadStackConfig(), opts.profile, consoleProgress()).down();
    });

  stack
    .command('status')
    .description('report each service; exits 1 when one is not ready')
    .addOption(profileOption())
    .option(
      '--json',
      'print JSON: {profile, kafka: {bootstrap, brokers}, temporal: {address, …}, services: [...]}',
    )
    .action(async (opts: { json?: boolean; profile: StackProfile }) => {
      const cfg = loadStackConfig();
      const statuses = await openStack(cfg, opts.profile).status();
      if (opts.json) process.stdout.write(statusJson(cfg, opts.profile, statuses));
      else printStatus(statuses);
      if (!statuses.every((s) => s.ready)) process.exitCode = EXIT.notFound;
    });

  return stack;
}
