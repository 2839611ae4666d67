/**
 * OpenTelemetry's variables at a relay process's start (docs/configuration.md): a bad value stops `worker` with
 * one line naming the variable and exit 2, like every configuration error; OTEL_* variables the relay does not
 * honour are named in one warning line, and the worker runs on. The real executable against the local stack.
 */
import { freePort, cliEnv, runCli, startCli } from './support/cli';
import { waitFor } from './support/wait';

jest.setTimeout(120_000);

test('a bad OTEL_TRACES_SAMPLER stops the worker at start: one line naming it, exit 2', async () => {
  const r = await runCli(['worker'], cliEnv({ OTEL_TRACES_SAMPLER: 'jaeger_remote' }), 60_000);
  expect(r.code).toBe(2);
  const lines = r.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain('invalid configuration: OTEL_TRACES_SAMPLER = "jaeger_remote": must be one of');
});

test('OTEL_* variables the relay does not honour are named in one warning at start; the worker runs on', async () => {
  const { child, result } = startCli(
    ['worker'],
    cliEnv({
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info', // to see 'worker running'
      METRICS_PORT: String(await freePort()),
      TEMPORAL_TASK_QUEUE: `otel-start-${process.pid}-${Date.now()}`,
      OTEL_PROPAGATORS: 'b3',
      OTEL_METRICS_EXPORTER: 'none',
      // Honoured (read by the relay, or by the SDK): not named.
      OTEL_TRACES_SAMPLER: 'always_off',
      OTEL_BSP_SCHEDULE_DELAY: '200',
    }),
    90_000,
  );
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  try {
    await waitFor(() => /"msg":"worker running"/.test(stderr), { timeoutMs: 60_000, what: 'worker running' });
    const warnings = stderr
      .split('\n')
      .filter((l) => l.includes('not honoured'))
      .map((l) => JSON.parse(l) as { level: string; msg: string; variables: string[] });
    expect(warnings).toEqual([
      expect.objectContaining({
        level: 'warn',
        msg: 'OpenTelemetry variables not honoured: OTEL_METRICS_EXPORTER, OTEL_PROPAGATORS',
        variables: ['OTEL_METRICS_EXPORTER', 'OTEL_PROPAGATORS'],
      }),
    ]);
  } finally {
    child.kill('SIGTERM');
    await result;
  }
});
