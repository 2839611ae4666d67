/** `poimen-relay topics apply | list`: wiring only. */
import { Command, Option } from 'commander';
import { ConfigError, EXIT } from '../errors';
import { clusterDefaultReplicationFactor } from '../kafka/brokerDefaults';
import { specsForThisCluster, tenantTopicSpecs } from '../kafka/topics';
import { withKafkaAdmin } from './kafkaAdmin';
import { replicationWarnings } from '../ops/replicationWarnings';
import { applyTopics, listTopics, specsFromFile, validateTenants } from '../ops/topics';

const positiveInt = (flag: string) => (v: string) => {
  if (!/^[1-9]\d*$/.test(v))
    throw new ConfigError(flag, `= ${JSON.stringify(v)}: must be a positive whole number`);
  return Number(v);
};

export function topicsCommand(): Command {
  const topics = new Command('topics').description('declare and list the relay topics (contract §2)');
  topics
    .command('apply')
    .description(
      'idempotently declare .dispatch, .events and .dispatch.dlq (14-day retention) per tenant; --tenant or --file is required',
    )
    .addOption(new Option('--tenant <tenant...>', 'tenant(s) to declare (or --file)').default([]))
    .option('--file <path>', 'declarative topics file, see deploy/topics.yaml (or --tenant)')
    .option('--partitions <n>', 'partitions per topic', positiveInt('--partitions'), 3)
    .option(
      '--replication-factor <n>',
      'replication factor (default: 3 on 3 or more brokers, else the broker count; min.insync.replicas=2 from 3)',
      positiveInt('--replication-factor'),
    )
    .option('--json', 'print JSON: [{topic, action, differences, warnings}]')
    .action(
      async (opts: {
        tenant: string[];
        file?: string;
        partitions: number;
        replicationFactor?: number;
        json?: boolean;
      }) => {
        validateTenants(opts.tenant);
        const specs = [
          ...opts.tenant.flatMap((t) =>
            tenantTopicSpecs(t, { partitions: opts.partitions, replicationFactor: opts.replicationFactor }),
          ),
          ...(opts.file ? specsFromFile(opts.file) : []),
        ];
        if (specs.length === 0) throw new ConfigError('--tenant', 'or --file is required');
        const results = await withKafkaAdmin(async (_kafka, admin) => {
          // The factors as they will be declared, so the warning speaks of what is created.
          const declared = await specsForThisCluster(admin, specs);
          const warnings = replicationWarnings(declared, await clusterDefaultReplicationFactor(admin));
          if (warnings.summary) process.stderr.write(`poimen-relay: warning: ${warnings.summary}\n`);
          // The declaration as written: applyTopics tells a min ISR the file set from one the policy adds.
          const applied = await applyTopics(admin, specs);
          for (const r of applied) {
            for (const w of r.warnings) process.stderr.write(`poimen-relay: warning: ${r.topic}: ${w}\n`);
          }
          return applied.map((r) => ({
            ...r,
            warnings: [...(warnings.byTopic[r.topic] ?? []), ...r.warnings],
          }));
        });
        if (opts.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
        else {
          for (const r of results) {
            process.stdout.write(
              `${r.action.padEnd(9)} ${r.topic}${r.differences.length ? `: ${r.differences.join('; ')}` : ''}\n`,
            );
          }
        }
        const differing = results.filter((r) => r.action === 'differs');
        if (differing.length > 0) {
          process.stderr.write(
            `poimen-relay: ${differing.length} topic(s) exist with settings that differ from the declaration; change them deliberately (kafka-configs / kafka-topics), not by re-applying\n`,
          );
          process.exitCode = EXIT.topicsDiffer;
        }
      },
    );
  topics
    .command('list')
    .description('topics with partitions, replication factor and retention')
    .option('--json', 'print JSON: [{topic, partitions, replicationFactor, retentionMs}]')
    .action(async (opts: { json?: boolean }) => {
      const list = await withKafkaAdmin((_kafka, admin) => listTopics(admin));
      if (opts.json) process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
      else {
        for (const t of list) {
          const retention = t.retentionMs === null ? '-' : `${t.retentionMs} ms`;
          process.stdout.write(
            `${t.topic.padEnd(60)} partitions ${String(t.partitions).padEnd(4)} rf ${t.replicationFactor}  retention ${retention}\n`,
          );
        }
      }
    });
  return topics;
}
