/**
 * The bench, the profiler and the chaos tool keep the CLI's promise for a bad setting or flag (docs/cli.md): one
 * line on stderr naming it, no stack trace, before anything starts, and a setting's exit code is the CLI's (2).
 * Each once printed the error's stack (a cluster port past 32755 showed thirteen lines of loader frames). The
 * tools are built by npm test's pretest; nothing here starts a stack, since each fails while reading its settings.
 */
import { runTool } from '../support/cli';

jest.setTimeout(60_000);

/** A port whose derived ports (brokers, controllers) would pass 65535. */
const BAD_PORT = { POIMEN_CLUSTER_KAFKA_PORT: '39092' };
const PORT_LINE = 'invalid configuration: POIMEN_CLUSTER_KAFKA_PORT = "39092": must be <= 32755';

async function oneLine(entry: string, args: string[], env: Record<string, string>) {
  const res = await runTool(entry, args, { ...process.env, ...env }, 30_000);
  return { code: res.code, lines: res.stderr.split('\n').filter((l) => l.trim() !== '') };
}

test.each([
  ['bench/main', 'bench', ['--phases', 'fairness']],
  ['bench/profileRelay', 'profile', []],
  ['chaos/main', 'chaos', ['--quick']],
])('%s: a bad stack setting is one line naming it, exit 2', async (entry, name, args) => {
  expect(await oneLine(entry, args, BAD_PORT)).toEqual({ code: 2, lines: [`${name}: ${PORT_LINE}`] });
});

test('chaos: a dev stack without a database file is one line naming the setting', async () => {
  expect(await oneLine('chaos/main', ['--quick'], { POIMEN_STACK_TEMPORAL_IN_MEMORY: 'true' })).toEqual({
    code: 2,
    lines: [
      'chaos: invalid configuration: POIMEN_STACK_TEMPORAL_IN_MEMORY = true: the soak kills Temporal, so it needs SQLite persistence',
    ],
  });
});

// Commander's own line for a flag it refused, with its exit code 1; a flag the tool refuses after parsing is a
// setting (2).
test.each([
  [
    'bench/main',
    ['--n', '0'],
    1,
    "error: option '--n <n>' argument '0' is invalid. must be a whole number ≥ 1",
  ],
  [
    'bench/main',
    ['--phases', 'bogus'],
    2,
    "bench: invalid configuration: --phases = 'bogus': unknown phase 'bogus' (known: ",
  ],
  [
    'bench/profileRelay',
    ['--role', 'kafka'],
    1,
    "error: option '--role <role>' argument 'kafka' is invalid. must be worker or ingest",
  ],
  [
    'bench/profileRelay',
    ['--set', 'oops'],
    1,
    "error: option '--set <KEY=VALUE>' argument 'oops' is invalid. must be KEY=VALUE",
  ],
])('%s %j: a bad flag is one line naming it', async (entry, args, exitCode, start) => {
  const { code, lines } = await oneLine(entry, args, {});
  expect({ code, lines }).toEqual({ code: exitCode, lines: [expect.stringMatching(/./)] });
  expect(lines[0]!.startsWith(start)).toBe(true);
});
