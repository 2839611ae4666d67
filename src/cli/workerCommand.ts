/** `poimen-relay worker`: wiring only. */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { Command } from 'commander';
import { loadRelayConfig } from '../config';
import { handleSignals } from '../lifecycle';
import { createLogger } from '../logger';
import { createMetrics } from '../metrics';
import { ObservabilityServer } from '../observability';
import { startRelayWorker } from '../worker/relayWorker';

export function workerCommand(): Command {
  return new Command('worker')
    .description('run a Temporal worker for the dispatch workflow')
    .action(async () => {
      const cfg = loadRelayConfig('worker');
      const logger = createLogger('poimen-worker', cfg.logLevel);
      // Must precede any connection: routes the SDK's own logs through our logger, at WARN and above.
      const sdkLog = logger.child({ component: 'temporal-sdk' });
      Runtime.install({
        logger: new DefaultLogger('WARN', (e) =>
          sdkLog[e.level === 'ERROR' ? 'error' : 'warn'](e.meta ?? {}, e.message),
        ),
      });
      const metrics = createMetrics({ role: 'worker' });
      const relay = await startRelayWorker(cfg, metrics, logger);
      const http = await ObservabilityServer.start(cfg.metricsPort, metrics.registry, { ready: relay.ready });
      logger.info(
        { taskQueue: cfg.temporal.taskQueue, namespace: cfg.temporal.namespace, metricsPort: http.port },
        'worker running',
      );
      const parts = [{ name: 'metrics server', close: () => http.close() }, ...relay.parts];
      const drained = handleSignals(logger, () => parts);
      await Promise.race([relay.run, drained]);
      await drained;
      logger.info('worker stopped');
    });
}
