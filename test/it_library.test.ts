/**
 * The package's library entry (`require('poimen-relay')`, package.json `exports`) runs the relay inside an
 * application's own process: config from an env object, createWorker and createIngester with the application's
 * logger and metrics, one dispatch end to end, then close() — twice, as a shutdown path may call it.
 */
import pino from 'pino';
import type * as Relay from '../src/index';
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

jest.setTimeout(180_000);

// The built package through its own name, as an embedding application resolves it (not ../src).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const relay = require('poimen-relay') as typeof Relay;

let h: Harness;
const services: Relay.RelayService[] = [];
afterEach(async () => {
  for (const s of services.splice(0)) await s.close();
  await h?.cleanup();
});

test('createWorker and createIngester from the package entry relay a dispatch, and close() is idempotent', async () => {
  h = await createHarness();
  const logger = relay.createLogger('it-library', 'warn');
  const worker = await relay.createWorker(relay.loadRelayConfig('worker', { ...h.env, METRICS_PORT: '0' }), {
    logger,
    metrics: relay.createMetrics({ defaultMetrics: false }),
  });
  services.push(worker);
  const ingester = await relay.createIngester(
    relay.loadRelayConfig('ingester', { ...h.env, METRICS_PORT: '0' }),
    {
      logger,
      metrics: relay.createMetrics({ defaultMetrics: false }),
    },
  );
  services.push(ingester);
  expect(worker.ready()).toBe(false);
  expect(ingester.ready()).toBe(false);
  expect(ingester.readinessDetail()).toBe('not started');
  await worker.start();
  await ingester.start();
  await waitFor(() => worker.ready() && ingester.ready(), { timeoutMs: 60_000, what: 'both services ready' });

  await h.publish(h.dispatchValue('lib-1'));
  await h.api.waitFor((api) => api.runs.has('lib-1'), 60_000, 'the run of lib-1');
  const handle = h.client.workflow.getHandle(h.wfId('lib-1'));
  await expect(handle.result()).resolves.toMatchObject({ admission: 'created' });

  await ingester.close();
  await ingester.close();
  await worker.close();
  await worker.close();
  await expect(worker.done).resolves.toBeUndefined();
  expect(worker.ready()).toBe(false);
});

test('a worker made and closed without start() lets go of everything (no part fails to close)', async () => {
  h = await createHarness();
  const lines: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
  const worker = await relay.createWorker(relay.loadRelayConfig('worker', { ...h.env, METRICS_PORT: '0' }), {
    logger,
    metrics: relay.createMetrics({ defaultMetrics: false }),
  });
  expect(worker.readinessDetail()).toBe('not started');
  await worker.close();
  await expect(worker.done).resolves.toBeUndefined();
  expect(lines.filter((l) => l.includes('error while closing'))).toEqual([]);
});
