/**
 * The relay's log lines from its real processes (real Kafka, real Temporal): JSON with level names as strings
 * (stderr is a file here, not a terminal), and at LOG_LEVEL=debug one line per record for its outcome at the
 * ingester, each naming the tenant, dispatch, workflow, Temporal run and trace, the same fields the worker's lines
 * for that dispatch carry.
 */
import fs from 'node:fs';
import { type Harness, createHarness } from './support/relayHarness';
import type { RelayProcess } from './support/relay';
import { waitFor } from './support/wait';

jest.setTimeout(120_000);

type Line = Record<string, unknown>;

function lines(p: RelayProcess): Line[] {
  return fs
    .readFileSync(p.logFile, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);
}

let h: Harness;
afterAll(async () => {
  await h?.cleanup();
});

test('each record’s outcome is logged at debug with its tenant, dispatch_key, workflow_id, Temporal run id and traceparent', async () => {
  h = await createHarness({ env: { LOG_LEVEL: 'debug' } });
  const worker = await h.startWorker();
  const ingester = await h.startIngester();
  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  await h.publish(h.dispatchValue('logged-1'), { headers: { traceparent } });
  await h.publish('{"not": "a dispatch"}', { key: 'bad-1' });

  const started = await waitFor(
    () =>
      lines(ingester).find((l) => l.msg === 'record started its workflow' && l.dispatch_key === 'logged-1'),
    { timeoutMs: 60_000, what: 'the ingester’s line for the started record' },
  );
  const run = await h.client.workflow.getHandle(h.wfId('logged-1')).describe();
  expect(started).toMatchObject({
    level: 'debug',
    outcome: 'started',
    tenant: h.tenant,
    dispatch_key: 'logged-1',
    workflow_id: h.wfId('logged-1'),
    temporal_run_id: run.runId,
    traceparent,
  });

  const deadLettered = await waitFor(() => lines(ingester).find((l) => l.msg === 'record dead-lettered'), {
    timeoutMs: 60_000,
    what: 'the ingester’s line for the dead-lettered record',
  });
  expect(deadLettered).toMatchObject({
    level: 'debug',
    outcome: 'dead_lettered',
    tenant: h.tenant,
    type: 'malformed_dispatch',
    reason: expect.stringMatching(/workflow_ref/),
  });

  // The worker's line for the same dispatch names the same execution.
  const admitted = await waitFor(
    () => lines(worker).find((l) => l.msg === 'run admitted' && l.dispatch_key === 'logged-1'),
    { timeoutMs: 60_000, what: 'the worker’s line for the admitted run' },
  );
  expect(admitted).toMatchObject({
    level: 'info',
    tenant: h.tenant,
    workflow_id: h.wfId('logged-1'),
    temporal_run_id: run.runId,
    traceparent,
  });

  // Level names, never pino's numbers, on every line of both processes.
  for (const l of [...lines(ingester), ...lines(worker)]) expect(typeof l.level).toBe('string');
});

test('each process logs its effective configuration once at start, at info, secrets as set only', async () => {
  h ??= await createHarness({ env: { LOG_LEVEL: 'debug' } });
  const worker = await h.startWorker('worker-config');
  const ingester = await h.startIngester('ingest-config');
  for (const [p, role] of [
    [worker, 'worker'],
    [ingester, 'ingester'],
  ] as const) {
    const said = await waitFor(
      () => {
        const found = lines(p).filter((l) => l.msg === 'effective configuration');
        return found.length > 0 && lines(p).some((l) => l.msg === `${role} running`) ? found : undefined;
      },
      { timeoutMs: 60_000, what: `the ${role}'s effective configuration line` },
    );
    expect(said).toHaveLength(1);
    expect(said[0]!.level).toBe('info');
    const config = said[0]!.config as { name: string; value: string | null; source: string }[];
    const get = (name: string) => config.find((s) => s.name === name);
    expect(get('TEMPORAL_ADDRESS')).toMatchObject({
      value: process.env.TEMPORAL_ADDRESS,
      source: 'environment',
    });
    expect(get('LOG_LEVEL')).toMatchObject({ value: 'debug', source: 'environment' });
    if (role === 'worker') {
      expect(get('RUNS_API_URL')).toMatchObject({ value: h.env.RUNS_API_URL, source: 'environment' });
      expect(get('POIMEN_BREAKER_FAILURES')).toMatchObject({ value: '5', source: 'default' });
      expect(get('POIMEN_WORKER_MAX_ACTIVITIES')).toMatchObject({ value: '100', source: 'default' });
      const token = get('RUNS_API_TOKEN');
      expect(token?.value === null || token?.value === 'set').toBe(true);
    } else {
      expect(get('RETRY_MAX_DURATION_MS')).toBeDefined();
    }
  }
});
