/**
 * What `createIngester` and `createWorker` return, so a process (the CLI, or an application embedding the relay)
 * runs either the same way: `start()`, readiness for /readyz, one idempotent `close()` that releases every part
 * in reverse order of start.
 */
import { type Closeable, closeAll } from './lifecycle';
import type { Logger } from './logger';
import type { RelayMetrics } from './metrics';

export interface RelayServiceDeps {
  logger: Logger;
  metrics: RelayMetrics;
}

export interface RelayService {
  /** Starts consuming (ingester) or polling task queues (worker); resolves once it runs. */
  start(): Promise<void>;
  /** Settles when the service stops on its own (a worker's fatal error rejects it); closing settles it too. */
  readonly done: Promise<void>;
  ready(): boolean;
  /** One line on why the service is not ready, for operators reading /readyz. */
  readinessDetail(): string | undefined;
  close(): Promise<void>;
}

/** Closes `parts` once, in reverse order, however often `close()` is called. */
export function closeOnce(logger: Logger, parts: Closeable[]): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => (closing ??= closeAll(logger, parts));
}
