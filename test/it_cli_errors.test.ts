/**
 * The CLI's promise when something is wrong: one line on stderr naming what failed (for a service: which one and
 * its address), within a few seconds, no stack trace, and an exit code per class (docs/cli.md):
 * 1 not found, 2 usage or configuration, 4 unreachable, 5 credentials refused. `--json` keeps stdout JSON only.
 */
import net from 'node:net';
import { topics } from '../src/contract';
import { type CliResult, freePort, runCli } from './support/cli';
import { uniqueName, uniqueTenant } from './support/names';
import { type Harness, createHarness } from './support/relayHarness';
import { testServices } from './support/testEnv';

jest.setTimeout(120_000);

/**
 * The CLI's connect timeout (POIMEN_CLI_CONNECT_TIMEOUT_MS, default 5 s) plus starting node on a loaded 2-core
 * box; before the fix these commands took 10–23 s, and a silent Temporal held `dispatch status` for ever.
 */
const BOUND_MS = 10_000;

function env(extra: Record<string, string>): NodeJS.ProcessEnv {
  const s = testServices();
  // The operator's defaults: no LOG_LEVEL, so whatever the CLI logs by default shows up here.
  const base: NodeJS.ProcessEnv = {
    ...process.env,
    KAFKA_BROKERS: s.kafkaBrokers.join(','),
    TEMPORAL_ADDRESS: s.temporalAddress,
  };
  delete base.LOG_LEVEL;
  return { ...base, ...extra };
}

async function timed(args: string[], e: NodeJS.ProcessEnv): Promise<CliResult & { ms: number }> {
  const t0 = Date.now();
  const res = await runCli(args, e, 120_000);
  return { ...res, ms: Date.now() - t0 };
}

/** Exactly one stderr line, `poimen-relay: …` matching `pattern`; no stack trace, nothing on stdout. */
function expectOneLine(res: CliResult & { ms: number }, code: number, pattern: RegExp): void {
  const lines = res.stderr.split('\n').filter((l) => l.trim() !== '');
  expect({ code: res.code, lines, stdout: res.stdout }).toEqual({
    code,
    lines: [expect.stringMatching(pattern)],
    stdout: '',
  });
  expect(lines[0]).toMatch(/^poimen-relay: /);
  expect(res.stderr).not.toMatch(/\n\s+at /);
}

/** A TCP port that accepts connections and never says a word: a hung service, not a closed port. */
async function silentServer(): Promise<{ address: string; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

const tenant = uniqueTenant();
const kafkaCommands: string[][] = [
  ['topics', 'apply', '--tenant', tenant],
  ['topics', 'list'],
  ['dlq', 'list', '--tenant', tenant],
  ['dlq', 'replay', '--tenant', tenant],
  ['dlq', 'replay', '--tenant', tenant, '--dry-run', '--json'],
];
const temporalCommands: string[][] = [
  ['temporal', 'setup'],
  ['dispatch', 'status', '--tenant', tenant, '--key', 'k-1'],
];

describe('a service that is down: one line naming it and its address, exit 4, within a few seconds', () => {
  test.each(kafkaCommands.map((c) => [c.join(' '), c]))('Kafka on a closed port: %s', async (_name, args) => {
    const port = await freePort();
    const res = await timed(args as string[], env({ KAFKA_BROKERS: `127.0.0.1:${port}` }));
    expectOneLine(res, 4, new RegExp(`Kafka at 127\\.0\\.0\\.1:${port} is unreachable`));
    expect(res.ms).toBeLessThan(BOUND_MS);
  });

  test.each(temporalCommands.map((c) => [c.join(' '), c]))(
    'Temporal on a closed port: %s',
    async (_name, args) => {
      const port = await freePort();
      const res = await timed(args as string[], env({ TEMPORAL_ADDRESS: `127.0.0.1:${port}` }));
      expectOneLine(res, 4, new RegExp(`Temporal at 127\\.0\\.0\\.1:${port} is unreachable`));
      expect(res.ms).toBeLessThan(BOUND_MS);
    },
  );

  test('a Kafka that accepts connections and never answers: same line, same bound', async () => {
    const silent = await silentServer();
    try {
      const res = await timed(['topics', 'list'], env({ KAFKA_BROKERS: silent.address }));
      expectOneLine(res, 4, new RegExp(`Kafka at ${silent.address.replace(/\./g, '\\.')} is unreachable`));
      expect(res.ms).toBeLessThan(BOUND_MS);
    } finally {
      await silent.close();
    }
  });

  test('a Temporal that accepts connections and never answers: same line, same bound', async () => {
    const silent = await silentServer();
    try {
      const res = await timed(
        ['dispatch', 'status', '--tenant', tenant, '--key', 'k-1'],
        env({ TEMPORAL_ADDRESS: silent.address }),
      );
      expectOneLine(res, 4, new RegExp(`Temporal at ${silent.address.replace(/\./g, '\\.')} is unreachable`));
      expect(res.ms).toBeLessThan(BOUND_MS);
    } finally {
      await silent.close();
    }
  });
});

describe('usage and not found', () => {
  test('an unknown command or option, or a missing required one: exit 2, one line', async () => {
    for (const args of [
      ['topics', 'lst'],
      ['dlq', 'replay'],
      ['dlq', 'list', '--tenant', tenant, '--bogus'],
      // Discarding needs to be told which records: never all of them by default.
      ['dlq', 'discard', '--tenant', tenant],
    ]) {
      const res = await timed(args, env({}));
      const lines = res.stderr
        .split('\n')
        .filter((l) => l.startsWith('error:') || l.startsWith('poimen-relay:'));
      expect({ args, code: res.code, lines: lines.length }).toEqual({ args, code: 2, lines: 1 });
      expect(res.stderr).not.toMatch(/\n\s+at /);
    }
  });

  test('a tenant without DLQ topic: exit 1, one line naming the topic', async () => {
    const missing = uniqueTenant();
    for (const args of [
      ['dlq', 'list', '--tenant', missing],
      ['dlq', 'replay', '--tenant', missing, '--dry-run'],
    ]) {
      const res = await timed(args, env({}));
      expectOneLine(res, 1, new RegExp(`topic ${topics.dlq(missing).replace(/\./g, '\\.')} does not exist`));
      expect(res.ms).toBeLessThan(BOUND_MS);
    }
  });

  test('a namespace that does not exist: exit 1, one line naming it', async () => {
    const namespace = uniqueName('no-such-ns');
    const res = await timed(['temporal', 'setup'], env({ TEMPORAL_NAMESPACE: namespace }));
    expectOneLine(
      res,
      1,
      new RegExp(`namespace ${namespace} .*not found|namespace ${namespace} does not exist`),
    );
  });

  test('a dispatch with no execution: exit 1 (the answer is no), stdout says so', async () => {
    const res = await timed(
      ['dispatch', 'status', '--tenant', tenant, '--key', uniqueName('never')],
      env({}),
    );
    expect(res.code).toBe(1);
    expect(res.stdout).toMatch(/no execution/);
    expect(res.stderr).toBe('');
  });
});

describe('--json prints only JSON on stdout', () => {
  let h: Harness | undefined;
  afterAll(async () => h?.cleanup());

  test('dlq replay --dry-run --json: stdout is one JSON document listing what would be replayed', async () => {
    h = await createHarness();
    await h.startWorker();
    await h.startIngester();
    h.api.scriptFor('j-1', { kind: 'status', status: 422 });
    await h.publish(h.dispatchValue('j-1'));
    const [rec] = await h.readDlq(1);
    const res = await timed(['dlq', 'replay', '--tenant', h.tenant, '--dry-run', '--json'], env({}));
    expect(res.code).toBe(0);
    const out = JSON.parse(res.stdout) as { wouldReplay: number; records: { id: string }[] };
    expect(out).toMatchObject({ wouldReplay: 1, records: [{ id: rec!.id, dispatch_key: 'j-1' }] });
  });
});
