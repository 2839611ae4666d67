import type { Logger } from './logger';
import type { RelayMetrics } from './metrics';

export interface Closeable {
  name: string;
  close(): Promise<void>;
}

/**
 * SIGTERM/SIGINT drain: close parts in reverse order of start (the consumer stops fetching before its
 * Temporal client goes, the worker finishes activities before the producer goes). A second signal forces exit.
 */
export function handleSignals(logger: Logger, parts: () => Closeable[]): Promise<void> {
  return new Promise((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        logger.warn({ signal }, 'second signal: exiting without draining');
        process.exit(130);
      }
      stopping = true;
      logger.info({ signal }, 'draining; send the signal again to force exit');
      void closeAll(logger, parts()).then(resolve);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}

export async function closeAll(logger: Logger, parts: Closeable[]): Promise<void> {
  for (const part of [...parts].reverse()) {
    try {
      await part.close();
    } catch (err) {
      logger.error({ err, part: part.name }, 'error while closing');
    }
  }
}

/**
 * What `createIngester` and `createWorker` return, so a process (the CLI, or an application embedding the relay)
 * runs either the same way: `start()`, readiness for /readyz, one idempotent `close()` that releases every part
 * in reverse order of start.
 */
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
