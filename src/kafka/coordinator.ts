/**
 * Waiting for a group coordinator that is not ready yet: on a broker no consumer group has used, the first group
 * request makes Kafka create its offsets topic and load the coordinator, and until then every group request
 * (join, offset fetch, describe) is answered "loading" or "not available". The DLQ tools' groups are often the
 * first on a new cluster; their requests wait for it, a bounded while, instead of failing with Kafka's answer.
 * Only one-shot commands wait: the ingester's periodic reads (lag, DLQ gauges) try again at their next round.
 */
import { groupCoordinatorNotReady } from './errors';

/** How long a group request waits for the coordinator to become ready. */
export const COORDINATOR_WAIT_MS = 30_000;

/** `request`, made again while the coordinator is not ready, for COORDINATOR_WAIT_MS at most. */
export async function whenCoordinatorReady<T>(request: () => Promise<T>): Promise<T> {
  const began = Date.now();
  for (let pauseMs = 200; ; pauseMs = Math.min(pauseMs * 2, 2_000)) {
    try {
      return await request();
    } catch (err) {
      if (!groupCoordinatorNotReady(err) || Date.now() - began + pauseMs > COORDINATOR_WAIT_MS) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
}
