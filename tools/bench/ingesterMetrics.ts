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

const OPEN = 'poimen_ingest_tenant_open_dispatches';
const LONE = 'poimen_ingest_lone_closes_total';

/**
 * How admission watched the tenant's dispatches (poimen_ingest_lone_closes_total): the lone watches answered by
 * its visibility query, and those that went to a long poll each (a retried watch counts again). Precise watches
 * (one sample a second, every watch while another tenant is active or the bound has no room for late closes) are
 * not counted there. Read once the tenant has nothing open, so every lone watch has been answered, or at
 * `settleMs` (`settled` false then). Null without admission (its gauge has no sample for the tenant), or when the
 * page could not be read by then.
 */
export async function loneClosesSeen(
  ingester: { metricsPort: number },
  tenant: string,
  settleMs: number,
): Promise<LoneCloses | null> {
  const deadline = Date.now() + settleMs;
  for (;;) {
    const text = await scrape(ingester);
    const open = text === undefined ? undefined : metricValue(text, OPEN, { tenant });
    if (text !== undefined && open === undefined) return null;
    if (text !== undefined && (open === 0 || Date.now() >= deadline)) {
      // A labelled counter never incremented has no sample: none of that kind.
      return {
        visibility: metricValue(text, LONE, { via: 'visibility' }) ?? 0,
        long_poll: metricValue(text, LONE, { via: 'long_poll' }) ?? 0,
        settled: open === 0,
      };
    }
    if (Date.now() >= deadline) return null;
    await new Promise((r) => setTimeout(r, 250));
  }
}

export interface LoneCloses {
  visibility: number;
  long_poll: number;
  /** The tenant had nothing open when it was read. */
  settled: boolean;
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
    return text === undefined ? undefined : metricValue(text, OPEN, { tenant });
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
