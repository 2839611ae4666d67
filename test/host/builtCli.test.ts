/**
 * The built `poimen-relay` executable as an operator runs it: a bad value or a placeholder secret exits 2 with one
 * line, and the dev stack's commands, asked of the relay, say where they moved and start nothing. Host tests: they
 * need dist/ (npm test builds it in pretest; test/support/cli.ts refuses a dist/ older than src/, which would
 * test yesterday's code: a stale build once started a real stack from the moved-command test).
 */
import { runCli } from '../support/cli';

describe('the built executable at start', () => {
  test('exits 2 with one line when the Secret still holds a placeholder', async () => {
    for (const role of ['worker', 'ingest']) {
      const res = await runCli([role], { ...process.env, RUNS_API_TOKEN: 'REPLACE_ME' }, 30_000);
      expect({ role, code: res.code, stderr: res.stderr.trim() }).toEqual({
        role,
        code: 2,
        stderr: expect.stringMatching(
          /^poimen-relay: invalid configuration: RUNS_API_TOKEN is a placeholder[^\n]*$/,
        ),
      });
    }
  });

  test('exits with one clear line when a value is bad', async () => {
    for (const role of ['worker', 'ingest']) {
      const res = await runCli(
        [role],
        { ...process.env, METRICS_PORT: 'abc', RUNS_API_TOKEN: 'super-secret' },
        30_000,
      );
      expect(res.code).toBe(2);
      expect(res.stderr.trim()).toBe(
        'poimen-relay: invalid configuration: METRICS_PORT = "abc": must be a whole number',
      );
    }
  });
});

describe('`poimen-relay stack …` and `poimen-relay demo`', () => {
  test('print one line saying where the dev stack lives now, exit 2, and start nothing', async () => {
    for (const args of [['stack', 'up'], ['demo']]) {
      // A generous kill bound: on a loaded machine, loading the CLI alone has taken over 30 s.
      const res = await runCli(
        args,
        { ...process.env, POIMEN_STATE_DIR: '/nonexistent/poimen-state' },
        80_000,
      );
      expect({ args, code: res.code, stdout: res.stdout }).toEqual({ args, code: 2, stdout: '' });
      const lines = res.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(
          `^poimen-relay: '${args[0]}' is not a relay command: .*devstack/bin/poimen-dev\\.js ${args[0]}`,
        ),
      );
    }
  });
});
