/**
 * The bench, the profiler and the chaos tool keep the CLI's promise for a bad setting (docs/cli.md): one line on
 * stderr naming the variable and its value, no stack trace, before anything starts. Each once printed the
 * ConfigError's stack (a cluster port past 32755 showed thirteen lines of loader frames).
 */
import { runTool } from './support/cli';

jest.setTimeout(60_000);

/** The bad value: a port whose derived ports (brokers, controllers) would pass 65535. */
const BAD = { POIMEN_CLUSTER_KAFKA_PORT: '39092' };

test.each([
  ['bench/main', 'bench', ['--phases', 'fairness']],
  ['bench/profileRelay', 'profile', []],
  ['chaos/main', 'chaos', ['--quick']],
])('%s: a bad stack setting is one line naming it', async (entry, name, args) => {
  const res = await runTool(entry, args, { ...process.env, ...BAD }, 30_000);
  const lines = res.stderr.split('\n').filter((l) => l.trim() !== '');
  expect({ code: res.code, lines }).toEqual({
    code: 1,
    lines: [`${name}: invalid configuration: POIMEN_CLUSTER_KAFKA_PORT = "39092": must be <= 32755`],
  });
});
