import type { Logger } from './logger';

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
