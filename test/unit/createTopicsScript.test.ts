/**
 * deploy/scripts/create-topics.sh declares what `poimen-relay topics apply` declares: its `--dry-run` commands are
 * compared with the relay's own specs (tenantTopicSpecs, specsFromFile, specsForCluster), so a setting changed on
 * one side only fails here. Its awk reading of a topics file is compared with the relay's YAML reading of the same
 * file. No Kafka: the broker count comes from a stand-in for kafka-broker-api-versions.sh.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ITopicConfig } from 'kafkajs';
import { specsForCluster, tenantTopicSpecs } from '../../src/kafka/topics';
import { specsFromFile } from '../../src/ops/topics';

const root = path.resolve(__dirname, '..', '..');
const SCRIPT = path.join(root, 'deploy', 'scripts', 'create-topics.sh');

let work: string;
beforeEach(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-create-topics-'));
});
afterEach(() => fs.rmSync(work, { recursive: true, force: true }));

interface Declared {
  topic: string;
  partitions: number;
  /** Undefined: left to the broker's default.replication.factor. */
  replicationFactor: number | undefined;
  configs: string[];
}

function run(args: string[], brokers = 1) {
  // Stand-in for kafka-broker-api-versions.sh: its output has one "host:port (id: N rack: …) -> (" line per broker.
  const bav = path.join(work, 'kafka-broker-api-versions.sh');
  const lines = Array.from(
    { length: brokers },
    (_, i) => `b${i}:9092 (id: ${i} rack: null) -> (\\n  Produce(0): 0 to 11 [usable: 11],\\n)`,
  );
  fs.writeFileSync(bav, `#!/bin/sh\nprintf '${lines.join('\\n')}\\n'\n`, { mode: 0o755 });
  return spawnSync('bash', [SCRIPT, '--bootstrap-server', 'kafka:9092', ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, KAFKA_BROKER_API_VERSIONS: bav },
  });
}

function dryRun(args: string[], brokers?: number): Declared[] {
  const res = run(['--dry-run', ...args], brokers);
  if (res.status !== 0) throw new Error(`exit ${res.status}: ${res.stderr}`);
  return res.stdout
    .trim()
    .split('\n')
    .map((line) => {
      const words = line.trim().split(/ +/);
      const value = (flag: string) => words[words.indexOf(flag) + 1];
      expect(words.slice(0, 6)).toEqual([
        'kafka-topics.sh',
        '--bootstrap-server',
        'kafka:9092',
        '--create',
        '--if-not-exists',
        '--topic',
      ]);
      const rf = words.includes('--replication-factor') ? Number(value('--replication-factor')) : undefined;
      return {
        topic: value('--topic') as string,
        partitions: Number(value('--partitions')),
        replicationFactor: rf,
        configs: words.flatMap((w, i) => (words[i - 1] === '--config' ? [w] : [])).sort(),
      };
    });
}

/** The relay's declaration, as created on a cluster of `brokers` live brokers. */
function relay(specs: ITopicConfig[], brokers: number): Declared[] {
  return specsForCluster(specs, brokers).map((s) => ({
    topic: s.topic,
    partitions: s.numPartitions ?? 3,
    replicationFactor:
      s.replicationFactor !== undefined && s.replicationFactor > 0 ? s.replicationFactor : undefined,
    configs: (s.configEntries ?? []).map((c) => `${c.name}=${c.value}`).sort(),
  }));
}

function file(text: string): string {
  const f = path.join(work, 'topics.yaml');
  fs.writeFileSync(f, text);
  return f;
}

describe('deploy/scripts/create-topics.sh', () => {
  test.each([
    { args: ['--partitions', '2', '--replication-factor', '1'], brokers: 1, factor: 1 },
    { args: ['--replication-factor', '3'], brokers: 3, factor: 3 },
    { args: ['--partitions', '5'], brokers: 1, factor: undefined },
    { args: [], brokers: 3, factor: undefined },
  ])(
    'tenants given as arguments ($args, $brokers live broker(s)) get the topics and settings of `topics apply --tenant`',
    ({ args, brokers, factor }) => {
      const partitions = args.includes('--partitions')
        ? Number(args[args.indexOf('--partitions') + 1])
        : undefined;
      const expected = relay(
        ['acme', 'globex'].flatMap((t) => tenantTopicSpecs(t, { partitions, replicationFactor: factor })),
        brokers,
      );
      expect(dryRun([...args, 'acme', '--tenant', 'globex'], brokers)).toEqual(expected);
    },
  );

  test('deploy/topics.yaml gives the topics and settings of `topics apply --file deploy/topics.yaml`', () => {
    const topicsFile = path.join(root, 'deploy', 'topics.yaml');
    const declared = dryRun(['--file', topicsFile], 3);
    expect(declared).toEqual(relay(specsFromFile(topicsFile), 3));
    expect(declared.map((d) => d.topic)).toContain('poimen-memory-metric-dlq');
  });

  test.each([
    [
      'block lists, quotes and comments',
      "# c\npartitions: 2  # two\ntenants:\n  - a1\n  - \"b-2\"\nextraTopics:\n  - name: 'x.y'\n    replicationFactor: 3\n    config:\n      retention.ms: 5\n      min.insync.replicas: '1'\n  - name: z\n    partitions: 1\n",
    ],
    [
      'flow collections, no replication factor',
      'tenants: [a, b]\nextraTopics:\n  - name: m\n    config: { retention.ms: 7, cleanup.policy: compact }\n',
    ],
    ['tenants only', 'tenants: [c]\nreplicationFactor: 1\nextraTopics: []\n'],
  ])('a file with %s reads as the relay reads it', (_shape, text) => {
    const f = file(text);
    for (const brokers of [1, 3])
      expect(dryRun(['--file', f], brokers)).toEqual(relay(specsFromFile(f), brokers));
  });

  test.each([
    [['Acme'], /^create-topics\.sh: tenant "Acme" must match /],
    [['--file', 'tenants: [ok, a.b]'], /^create-topics\.sh: tenant "a\.b" must match /],
    [['--file', 'partitions: 0\ntenants: [a]'], /: line 1: partitions must be a whole number >= 1, not "0"$/],
    [
      ['--file', "tenants: [a]\nreplicationFactor: '3'"],
      /: line 2: replicationFactor must be a whole number >= 1, not "'3'"$/,
    ],
    [['--file', 'tenants: [a\n'], /: line 1: expected \[\.\.\.\], not "\[a"$/],
    [['--file', 'tenant: [a]'], /: line 1: unknown key "tenant" /],
    [['--file', 'tenants:\n\t- a'], /: line 2: tabs are not YAML indentation$/],
    [['--file', 'extraTopics:\n  - partitions: 2\n'], /: an extraTopics entry needs a name$/],
    [['--file', 'extraTopics:\n  - name: a/b\n'], /: extra topic "a\/b" is not a valid Kafka topic name /],
    [['--partitions', '0', 'a'], /^create-topics\.sh: --partitions = "0": must be a positive whole number$/],
    [[], /^create-topics\.sh: give tenants \(--tenant or arguments\) or --file$/],
    [['--file', '/nonexistent/topics.yaml'], /: not a readable file$/],
  ])('%j is refused with one line, exit 2, before any Kafka tool runs', (args, message) => {
    const argv =
      args[0] === '--file' && !args[1]?.startsWith('/') ? ['--file', file(args[1] as string)] : args;
    const res = run(argv);
    expect(res.status).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(message)]);
  });

  test('--help names every option and exits 0; no bootstrap server is refused', () => {
    const help = spawnSync('bash', [SCRIPT, '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    for (const o of ['--bootstrap-server', '--command-config', '--file', '--tenant', 'KAFKA_TOPICS'])
      expect(help.stdout).toContain(o);
    const none = spawnSync('bash', [SCRIPT, 'acme'], { encoding: 'utf8', env: { PATH: process.env.PATH } });
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(
      /--bootstrap-server \(or KAFKA_BOOTSTRAP_SERVER \/ KAFKA_BROKERS\) is required/,
    );
  });
});
