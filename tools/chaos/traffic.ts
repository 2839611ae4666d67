/**
 * The soak's traffic: a seeded plan of unique dispatches, duplicates of earlier ones and malformed records,
 * spread evenly over `publishSeconds` so that the kills land in the middle of the traffic.
 */
import type { ITopicConfig, Producer } from 'kafkajs';
import { topics } from 'poimen-relay/internal/contract/index';
import { tenantTopicSpecs } from 'poimen-relay/internal/kafka/topics';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A small seeded PRNG (mulberry32), so a soak's schedule can be re-run from its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Planned {
  key: string | null;
  value: Buffer | null;
  kind: 'valid' | 'duplicate' | 'malformed';
  /** Malformed: the marker its DLQ record must carry (in the payload or the record key). */
  marker?: string;
  expectType?: 'malformed_dispatch' | 'tenant_mismatch';
}

/** Malformed shapes, cycled: each carries its marker where the DLQ record keeps it. */
function malformed(tenant: string, marker: string, n: number): Planned {
  const shapes: [Buffer | null, 'malformed_dispatch' | 'tenant_mismatch'][] = [
    [Buffer.from(`{"dispatch_key": "${marker}", "workflow_ref": `), 'malformed_dispatch'],
    [Buffer.from(JSON.stringify([marker])), 'malformed_dispatch'],
    [Buffer.from(JSON.stringify({ dispatch_key: marker, input: {} })), 'malformed_dispatch'],
    [
      Buffer.from(JSON.stringify({ workflow_ref: 'chaos@v1', input: {}, dispatch_key: `${marker} bad` })),
      'malformed_dispatch',
    ],
    [
      Buffer.from(
        JSON.stringify({
          workflow_ref: 'chaos@v1',
          input: {},
          dispatch_key: marker,
          tenant_id: `${tenant}x`,
        }),
      ),
      'tenant_mismatch',
    ],
    [
      Buffer.concat([
        Buffer.from(`{"dispatch_key":"${marker}","x":"`),
        Buffer.from([0xff, 0xfe]),
        Buffer.from('"}'),
      ]),
      'malformed_dispatch',
    ],
    [null, 'malformed_dispatch'],
  ];
  const [value, expectType] = shapes[n % shapes.length]!;
  return { key: marker, value, kind: 'malformed', marker, expectType };
}

export function plan(
  tenant: string,
  run: string,
  total: number,
  dupShare: number,
  badShare: number,
  rnd: () => number,
) {
  const records: Planned[] = [];
  const valid: Planned[] = [];
  let bad = 0;
  for (let i = 0; i < total; i++) {
    const r = rnd();
    if (r < badShare) {
      // Fixed width: no marker is a substring of another, so matching a DLQ record to its source is exact.
      records.push(malformed(tenant, `chaos-bad-${run}-${String(i).padStart(7, '0')}`, bad++));
    } else if (r < badShare + dupShare && valid.length > 0) {
      const original = valid[Math.floor(rnd() * valid.length)]!;
      records.push({ ...original, kind: 'duplicate' });
    } else {
      const key = `chaos-${run}-${i}`;
      const p: Planned = {
        key: `${tenant}:${key}`,
        value: Buffer.from(
          JSON.stringify({ workflow_ref: 'chaos@v1', input: { i }, goal_id: null, dispatch_key: key }),
        ),
        kind: 'valid',
      };
      records.push(p);
      valid.push(p);
    }
  }
  return records;
}
/** The plan, and what the verdict expects of it: a run per unique valid key, a dead letter per malformed record. */
export function planTraffic(
  tenant: string,
  run: string,
  opts: { dispatches: number; duplicateShare?: number; malformedShare?: number },
  rnd: () => number,
) {
  const records = plan(
    tenant,
    run,
    opts.dispatches,
    opts.duplicateShare ?? 0.1,
    opts.malformedShare ?? 0.02,
    rnd,
  );
  const uniqueValid = records.filter((r) => r.kind === 'valid');
  const validKeys = new Set(
    uniqueValid.map((r) => (JSON.parse(r.value!.toString('utf8')) as { dispatch_key: string }).dispatch_key),
  );
  const bad = records.filter((r) => r.kind === 'malformed');
  return { records, uniqueValid, validKeys, bad };
}

/**
 * Publishes the plan over `publishSeconds`; resolves with the seconds it really took. With `onePerSend` (the
 * cluster) each record goes in a send of its own and only failed sends are repeated: kafkajs 2.2.4 remembers
 * per send which brokers answered, so when a killed leader's partition moves to a broker that already took
 * another partition of the same send, its records are never sent and the send still resolves (kafkajs #1303) —
 * a loss that is the publisher's, not the relay's.
 */
export async function publish(
  producer: Producer,
  tenant: string,
  records: Planned[],
  opts: { publishSeconds: number; onePerSend?: boolean },
): Promise<number> {
  let published = 0;
  const t0 = Date.now();
  const perMs = records.length / (opts.publishSeconds * 1000);
  const send = (batch: Planned[]) =>
    producer.send({
      topic: topics.dispatch(tenant),
      acks: -1,
      messages: batch.map((r) => ({ key: r.key, value: r.value })),
    });
  // What must be sent again after one try, with the first error.
  const attempt = async (batch: Planned[]): Promise<{ again: Planned[]; err?: unknown }> => {
    if (!opts.onePerSend)
      return send(batch).then(
        () => ({ again: [] }),
        (err: unknown) => ({ again: batch, err }),
      );
    const sent = await Promise.allSettled(batch.map((r) => send([r])));
    const rejected = sent.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    return { again: batch.filter((_, i) => sent[i]!.status === 'rejected'), err: rejected[0] };
  };
  while (published < records.length) {
    const due = Math.min(records.length, Math.ceil((Date.now() - t0) * perMs) + 1);
    let pending = records.slice(published, due);
    // Kafka may be down for a while: the publisher keeps trying (bounded), as a real producer would.
    const deadline = Date.now() + 180_000;
    while (pending.length > 0) {
      const { again, err } = await attempt(pending);
      if (again.length > 0 && Date.now() > deadline) throw err;
      if (again.length > 0) await sleep(500);
      pending = again;
    }
    published = due;
    await sleep(100);
  }
  return (Date.now() - t0) / 1000;
}

/**
 * The soak tenant's topics: on the cluster replicated three times with min.insync.replicas=2, so an acked record
 * survives the one broker a fault takes down (kept when tenantTopicSpecs already sets it).
 */
export function soakTopicSpecs(tenant: string, partitions: number, replicated: boolean): ITopicConfig[] {
  if (!replicated) return tenantTopicSpecs(tenant, { partitions });
  return tenantTopicSpecs(tenant, { partitions, replicationFactor: 3 }).map((spec) => {
    const entries = spec.configEntries ?? [];
    return entries.some((e) => e.name === 'min.insync.replicas')
      ? spec
      : { ...spec, configEntries: [...entries, { name: 'min.insync.replicas', value: '2' }] };
  });
}
