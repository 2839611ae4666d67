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
