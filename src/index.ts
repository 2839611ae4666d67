/**
 * poimen-relay as a library: what an application embedding the relay needs to run an ingester or a worker in its
 * own process, with its own logger and metrics registry. The CLI (`poimen-relay ingest` / `worker`) is a thin
 * layer over exactly these.
 *
 *   const cfg = loadRelayConfig('worker');
 *   const worker = await createWorker(cfg, { logger: createLogger('my-worker'), metrics: createMetrics() });
 *   await worker.start();
 *   ...
 *   await worker.close();
 */
export { type Env, type RelayConfig, type Role, loadRelayConfig } from './config';
export { RETRY_DEFAULTS, RUNS_API_TIMEOUT_MS_DEFAULT } from './config/defaults';
export {
  type Dispatch,
  type DispatchValidation,
  type DlqRecord,
  type DlqType,
  parseDlqRecord,
  topics,
  validateDispatch,
  workflowId,
} from './contract';
export { ConfigError } from './errors';
export { createIngester } from './ingest/createIngester';
export { type Logger, createLogger } from './logger';
export { type RelayMetrics, createMetrics } from './metrics';
export { ObservabilityServer } from './observability';
export type { RelayService, RelayServiceDeps } from './lifecycle';
export { VERSION } from './version';
export { createWorker } from './worker/createWorker';
export type { DispatchInput, DispatchPolicy, DispatchResult } from './contract/workflow';
