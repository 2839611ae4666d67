/* eslint-disable max-lines -- one case per CLI convention, sharing one stack set-up */
/**
 * The conventions a CLI user expects, on the built executable: required options say so in the help, `ingest` and
 * `worker` list the variables they read, every help ends with the exit codes, every command that reports has
 * `--json`, a flag wins over its environment variable, and `topics apply` warns when it is about to declare a
 * replication factor below the cluster's `default.replication.factor`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { envVarsReadBy } from '../src/config/envTable';
import { SEARCH_ATTRIBUTE_NAMES, topics } from '../src/contract';
import { REPO_ROOT, type CliResult, freePort, runCli, cliEnv } from './support/cli';
import { startKafkaWithProperties } from './support/dedicatedKafka';
import { uniqueName, uniqueTenant } from './support/names';
import { testServices } from './support/testEnv';
import { tempDir } from './support/tlsServices';
import { waitFor } from './support/wait';

jest.setTimeout(180_000);

const cli = (args: string[], env: NodeJS.ProcessEnv = cliEnv()): Promise<CliResult> =>
  runCli(args, env, 120_000);

function json<T>(res: CliResult): T {
  if (res.code !== 0) throw new Error(`exit ${res.code}: ${res.stderr}`);
  return JSON.parse(res.stdout) as T;
}

/** The help's entry for one option, its wrapped continuation lines joined: `--tenant <tenant>  tenant (required)`. */
function optionLine(help: string, flag: string): string {
  const lines = help.split('\n');
  const i = lines.findIndex((l) => l.trimStart().startsWith(flag));
  if (i < 0) throw new Error(`no ${flag} in help:\n${help}`);
  const rest = lines.slice(i + 1);
  const end = rest.findIndex((l) => !/^ {6,}\S/.test(l));
  return [lines[i]!, ...rest.slice(0, end < 0 ? rest.length : end)].map((l) => l.trim()).join(' ');
}

describe('help', () => {
  test('required options are marked "(required)"; optional ones are not', async () => {
    for (const [cmd, required, optional] of [
      [['dlq', 'list'], ['--tenant'], ['--limit', '--json']],
      [['dlq', 'replay'], ['--tenant'], ['--id', '--dry-run']],
      [['dlq', 'discard'], ['--tenant'], ['--all']],
      [['dlq', 'send-test'], ['--tenant'], ['--count', '--json']],
      [['dlq', 'purge-tests'], ['--tenant'], ['--dry-run', '--json']],
      [['dispatch', 'status'], ['--tenant', '--key'], ['--json']],
    ] as const) {
      const help = await cli([...cmd, '--help']);
      expect(help.code).toBe(0);
      for (const f of required) expect(optionLine(help.stdout, f)).toMatch(/\(required\)/);
      for (const f of optional) expect(optionLine(help.stdout, f)).not.toMatch(/\(required\)/);
    }
  });

  test('ingest --help and worker --help list the environment variables each reads, with the flag that overrides it', async () => {
    for (const [cmd, reader, mustList, mustNotList] of [
      [
        'ingest',
        'ingest',
        ['KAFKA_BROKERS', 'DISPATCH_TOPIC_PATTERN', 'RETRY_MAX_ATTEMPTS'],
        ['RUNS_API_TOKEN'],
      ],
      ['worker', 'worker', ['TEMPORAL_TASK_QUEUE', 'RUNS_API_URL', 'RUNS_API_TOKEN'], ['KAFKA_GROUP_ID']],
    ] as const) {
      const help = await cli([cmd, '--help']);
      expect(help.code).toBe(0);
      const env = help.stdout.slice(help.stdout.indexOf('Environment'));
      expect(env).not.toBe(help.stdout);
      const listed = [...env.matchAll(/^ {2}([A-Z][A-Z0-9_]+(?:<[A-Z]+>)?) /gm)].map((m) => m[1]);
      expect(listed).toEqual(envVarsReadBy(reader).map((v) => v.name));
      expect(listed).toEqual(expect.arrayContaining([...mustList]));
      for (const v of mustNotList) expect(listed).not.toContain(v);
      // A variable that has a flag names it, and the flag's own line names the variable.
      expect(optionLine(help.stdout, '--kafka-brokers')).toMatch(/\(env: KAFKA_BROKERS\)/);
      expect(optionLine(help.stdout, '--temporal-address')).toMatch(/\(env: TEMPORAL_ADDRESS\)/);
      // Secrets never become flags: a command line shows up in `ps` and in shell history.
      expect(help.stdout).not.toMatch(/--\S*(password|token|api-key)/);
    }
  });

  test('every help ends with the exit codes', async () => {
    for (const args of [['--help'], ['topics', 'apply', '--help'], ['worker', '--help']]) {
      const help = await cli(args);
      expect(help.code).toBe(0);
      const tail = help.stdout.slice(help.stdout.indexOf('Exit codes'));
      for (const [code, meaning] of [
        [0, 'ok'],
        [1, 'not found'],
        [2, 'usage or configuration'],
        [3, 'differ'],
        [4, 'unreachable'],
        [5, 'refused'],
        [70, 'bug'],
      ] as const)
        expect(tail).toMatch(new RegExp(`^ +${code} +.*${meaning}`, 'm'));
    }
  });
});

describe('--json', () => {
  test('temporal setup --json: the namespace, what it registered and what was already there', async () => {
    const out = json<{ namespace: string; registered: string[]; alreadyPresent: string[] }>(
      await cli(['temporal', 'setup', '--json']),
    );
    expect(out).toEqual({
      namespace: testServices().namespace,
      registered: [],
      alreadyPresent: [...SEARCH_ATTRIBUTE_NAMES],
    });
  });
});

describe('a flag wins over its environment variable', () => {
  test('topics list --kafka-brokers reaches the broker the environment does not name', async () => {
    const closed = `127.0.0.1:${await freePort()}`;
    const env = cliEnv({ KAFKA_BROKERS: closed });
    expect((await cli(['topics', 'list'], env)).code).toBe(4);
    const res = await cli(
      ['topics', 'list', '--json', '--kafka-brokers', testServices().kafkaBrokers.join(',')],
      env,
    );
    expect(res.code).toBe(0);
    expect(Array.isArray(JSON.parse(res.stdout))).toBe(true);
  });

  test('temporal setup --temporal-address --temporal-namespace: the flags, not the environment', async () => {
    const s = testServices();
    const env = cliEnv({
      TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}`,
      TEMPORAL_NAMESPACE: uniqueName('no-such-ns'),
    });
    const out = json<{ namespace: string }>(
      await cli(
        [
          'temporal',
          'setup',
          '--json',
          '--temporal-address',
          s.temporalAddress,
          '--temporal-namespace',
          s.namespace,
        ],
        env,
      ),
    );
    expect(out.namespace).toBe(s.namespace);
  });

  test('a bad flag value is refused with one line naming the flag and its variable, even when the variable is fine', async () => {
    const res = await cli(['ingest', '--metrics-port', 'abc'], cliEnv({ METRICS_PORT: '9999' }));
    expect(res.code).toBe(2);
    expect(res.stderr.trim()).toBe(
      'poimen-relay: invalid configuration: --metrics-port (METRICS_PORT) = "abc": must be a whole number',
    );
  });

  /** `poimen-relay <role> …args` as a child, its JSON log lines collected. */
  function startRelay(args: string[], env: NodeJS.ProcessEnv) {
    const bin = path.join(REPO_ROOT, 'bin', 'poimen-relay.js');
    const child: ChildProcess = spawn(process.execPath, [bin, ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    let gone = false;
    const exited = new Promise<number | null>((r) =>
      child.once('exit', (code) => {
        gone = true;
        r(code);
      }),
    );
    return {
      /** The first log line with this message; fails at once when the process exits before it. */
      logged: (msg: string) =>
        waitFor(
          () => {
            const line = out
              .split('\n')
              .filter((l) => l.startsWith('{'))
              .map((l) => JSON.parse(l) as Record<string, unknown>)
              .find((l) => l.msg === msg);
            if (!line && gone) throw new Error(`exited before "${msg}": ${out.slice(-500)}`);
            return line;
          },
          { timeoutMs: 60_000, what: `"${msg}"` },
        ),
      stop: () => {
        if (!gone) child.kill('SIGTERM');
        return exited;
      },
    };
  }

  test.each([
    ['worker', 'worker running'],
    ['ingest', 'ingester running'],
  ])(
    '%s: metrics port, task queue and log level from the flags, not the environment',
    async (role, running) => {
      const [envPort, flagPort] = [await freePort(), await freePort()];
      const taskQueue = uniqueName('flag-queue');
      const env = cliEnv({
        METRICS_PORT: String(envPort),
        TEMPORAL_TASK_QUEUE: uniqueName('env-queue'),
        KAFKA_GROUP_ID: uniqueName('env-group'),
        DISPATCH_TOPIC_PATTERN: '^poimen\\.nothing-here\\.dispatch$',
        // With the environment's level the "running" line would not be logged at all.
        LOG_LEVEL: 'error',
      });
      const relay = startRelay(
        [role, '--metrics-port', String(flagPort), '--temporal-task-queue', taskQueue, '--log-level', 'info'],
        env,
      );
      try {
        const line = await relay.logged(running);
        expect(line).toMatchObject({ metricsPort: flagPort });
        if (role === 'worker') expect(line).toMatchObject({ taskQueue });
        expect((await fetch(`http://127.0.0.1:${flagPort}/metrics`)).status).toBe(200);
        await expect(fetch(`http://127.0.0.1:${envPort}/metrics`)).rejects.toThrow();
      } finally {
        expect(await relay.stop()).toBe(0);
      }
    },
  );

  test('ingest --kafka-group-id: the group the ingester joins is the flag', async () => {
    const group = uniqueName('flag-group');
    const relay = startRelay(
      ['ingest', '--kafka-group-id', group, '--metrics-port', '0', '--log-level', 'info'],
      cliEnv({
        KAFKA_GROUP_ID: uniqueName('env-group'),
        DISPATCH_TOPIC_PATTERN: '^poimen\\.nothing-here\\.dispatch$',
      }),
    );
    try {
      expect(await relay.logged('ingester running')).toMatchObject({ group });
    } finally {
      expect(await relay.stop()).toBe(0);
    }
  });
});

describe('topics apply and the cluster default replication factor', () => {
  let dir: string | undefined;
  let broker: Awaited<ReturnType<typeof startKafkaWithProperties>> | undefined;

  afterAll(async () => {
    await broker?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('at or above the default: no warning, and each JSON result carries an empty warnings list', async () => {
    // The shared stack's single broker has default.replication.factor 1 (Kafka's own default).
    const tenant = uniqueTenant();
    const res = await cli(['topics', 'apply', '--tenant', tenant, '--partitions', '1', '--json']);
    expect(res.code).toBe(0);
    expect(res.stderr).toBe('');
    expect(JSON.parse(res.stdout)).toEqual(
      [topics.dispatch(tenant), topics.events(tenant), topics.dlq(tenant)].map((topic) => ({
        topic,
        action: 'created',
        differences: [],
        warnings: [],
      })),
    );
  });

  test('below the default (a broker with default.replication.factor=2): one stderr line, and the warning in --json', async () => {
    dir = tempDir('poimen-rf-default-');
    broker = await startKafkaWithProperties(dir, ['default.replication.factor=2']);
    const tenant = uniqueTenant();
    const env = cliEnv({ KAFKA_BROKERS: broker.brokers });
    const res = await cli(
      ['topics', 'apply', '--tenant', tenant, '--partitions', '1', '--replication-factor', '1', '--json'],
      env,
    );
    expect(res.code).toBe(0);
    const lines = res.stderr.split('\n').filter((l) => l.trim() !== '');
    expect(lines).toEqual([
      `poimen-relay: warning: 3 topic(s) declared with replication factor 1, below the cluster's default.replication.factor 2: ${topics.dispatch(tenant)}, ${topics.events(tenant)}, ${topics.dlq(tenant)}`,
    ]);
    const results = JSON.parse(res.stdout) as { topic: string; action: string; warnings: string[] }[];
    expect(results.map((r) => [r.topic, r.action, r.warnings])).toEqual(
      [topics.dispatch(tenant), topics.events(tenant), topics.dlq(tenant)].map((t) => [
        t,
        'created',
        ["replication factor 1 is below the cluster's default.replication.factor 2"],
      ]),
    );
    // The warning is about the declaration, not a refusal: the topics exist, with the factor asked for.
    const kafka = new Kafka({ brokers: [broker.brokers], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    try {
      const meta = await admin.fetchTopicMetadata({ topics: [topics.dispatch(tenant)] });
      expect(meta.topics[0]?.partitions[0]?.replicas).toHaveLength(1);
    } finally {
      await admin.disconnect();
    }
    // The text output warns the same way. (Without --replication-factor the declaration leaves it to the broker's
    // default, and there is nothing to warn about.)
    const again = await cli(
      ['topics', 'apply', '--tenant', tenant, '--partitions', '1', '--replication-factor', '1'],
      env,
    );
    expect(again.code).toBe(0);
    expect(again.stderr.trim().split('\n')).toEqual([lines[0]]);
  });
});
