/**
 * What the fairness bench reads from a round's ingester while it runs (its Prometheus page): the tenant's open
 * dispatches by admission's gauge, sampled, and how a lone tenant's closes were seen, read once at the end.
 */
import { metricValue } from '#devstack/relayProcess';

/** The ingester's metrics page, or undefined when it did not answer within 2 s (busy or gone). */
async function scrape(ingester: { metricsPort: number }): Promise<string | undefined> {
  // A timer and a controller, not AbortSignal.timeout, which the collector may take first (nodejs/node#57736).
  const call = new AbortController();
  const timer = setTimeout(() => call.abort(), 2000);
  try {
    const res = await fetch(`http://127.0.0.1:${ingester.metricsPort}/metrics`, { signal: call.signal });
    return await res.text();
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * How admission saw the round's closes (poimen_ingest_lone_closes_total): by the lone watch's visibility query or
 * by a long poll each. Null without admission, or when the page could not be read: the counter is then not set.
 */
export async function loneClosesSeen(ingester: { metricsPort: number }): Promise<LoneCloses | null> {
  const text = await scrape(ingester);
  if (text === undefined) return null;
  const visibility = metricValue(text, 'poimen_ingest_lone_closes_total', { via: 'visibility' });
  const longPoll = metricValue(text, 'poimen_ingest_lone_closes_total', { via: 'long_poll' });
  if (visibility === undefined && longPoll === undefined) return null;
  return { visibility: visibility ?? 0, long_poll: longPoll ?? 0 };
}

export interface LoneCloses {
  visibility: number;
  long_poll: number;
}

/**
 * The tenant's open dispatches by admission's gauge, read every 250 ms while `phase()` says 'during'. A read that
 * fails or takes over 2 s (the ingester busy or gone) is a sample missed, never the round's failure.
 */
export function sampleOpen(
  ingester: { metricsPort: number },
  tenant: string,
  phase: () => 'before' | 'during' | 'after',
): { stop(): Promise<number[]> } {
  const samples: number[] = [];
  let stopped = false;
  const read = async (): Promise<number | undefined> => {
    const text = await scrape(ingester);
    return text === undefined
      ? undefined
      : metricValue(text, 'poimen_ingest_tenant_open_dispatches', { tenant });
  };
  const loop = (async () => {
    while (!stopped && phase() !== 'after') {
      if (phase() === 'during') {
        const v = await read();
        if (v !== undefined && phase() === 'during') samples.push(v);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  })().catch(() => undefined);
  return {
    async stop() {
      stopped = true;
      await loop;
      return samples;
    },
  };
}
