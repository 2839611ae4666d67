/**
 * The bad-input corpus end to end: real Kafka, real Temporal, the relay's real processes. Every
 * malformed record is followed by a valid one; hostile-but-valid records (lying keys and headers, extra fields,
 * edge-of-limit values) are mixed in. The whole corpus is published in one go.
 */
import fs from 'node:fs';
import type { IHeaders } from 'kafkajs';
import { topics, dlqRecordPayload, type DlqRecord } from '../src/contract';
import { CORPUS_MAX_BYTES, hostileValidCorpus, malformedCorpus } from './fixtures/malformed-corpus';
import { type Harness, createHarness } from './support/relayHarness';
import { metricSum, metricValue } from './support/relay';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

let h: Harness;
afterAll(async () => {
  await h?.cleanup();
});

interface Outgoing {
  value: Buffer | null;
  key?: string | Buffer | null;
  headers?: IHeaders;
}

describe('bad input', () => {
  let bad: ReturnType<typeof malformedCorpus>;
  let hostile: ReturnType<typeof hostileValidCorpus>;
  let dlq: DlqRecord[];
  let validKeys: string[];
  let ingesterPid: number | undefined;
  let ingester: Awaited<ReturnType<Harness['startIngester']>>;

  beforeAll(async () => {
    h = await createHarness({ env: { DISPATCH_MAX_BYTES: String(CORPUS_MAX_BYTES) } });
    await h.startWorker();
    ingester = await h.startIngester();
    ingesterPid = ingester.child.pid;
    bad = malformedCorpus(h.tenant);
    hostile = hostileValidCorpus(h.tenant);

    // Offsets on the fresh one-partition topic: malformed record i at 2i, the valid record after it at 2i+1.
    const messages: Outgoing[] = [];
    const afterKey = (i: number) => `valid-after-${i}`;
    for (const [i, c] of bad.entries()) {
      messages.push({ value: c.value, key: c.key ?? null, ...(c.headers ? { headers: c.headers } : {}) });
      messages.push({ value: Buffer.from(h.dispatchValue(afterKey(i))) });
    }
    for (const c of hostile)
      messages.push({ value: c.value, key: c.key ?? null, ...(c.headers ? { headers: c.headers } : {}) });
    validKeys = [...bad.map((_, i) => afterKey(i)), ...hostile.map((c) => c.dispatchKey)];

    // One go, in produce requests under the broker's 1 MB limit.
    let chunk: Outgoing[] = [];
    let size = 0;
    const flush = async () => {
      if (chunk.length === 0) return;
      await h.producer.send({ topic: topics.dispatch(h.tenant), acks: -1, messages: chunk });
      chunk = [];
      size = 0;
    };
    for (const m of messages) {
      const bytes = m.value?.length ?? 0;
      if (size + bytes > 600_000) await flush();
      chunk.push(m);
      size += bytes;
    }
    await flush();

    await h.api.waitFor(
      (a) => validKeys.every((k) => a.requestsFor(k).length >= 1),
      120_000,
      `all ${validKeys.length} valid dispatches to reach the API`,
    );
    dlq = await h.readDlq(bad.length, 120_000);
  });

  test(`every malformed record of the corpus (≥ 50) gets one DLQ record with its precise reason and type`, () => {
    expect(bad.length).toBeGreaterThanOrEqual(50);
    expect(dlq).toHaveLength(bad.length);
    const failures: string[] = [];
    for (const [i, c] of bad.entries()) {
      const rec = dlq.filter((r) => r.source.offset === String(2 * i));
      if (rec.length !== 1) {
        failures.push(`${c.name}: ${rec.length} DLQ records`);
        continue;
      }
      const r = rec[0]!;
      if (r.type !== c.expectType || !c.expectReason.test(r.error))
        failures.push(`${c.name}: got ${r.type} "${r.error}"`);
      if (r.dispatch_key !== c.expectDispatchKey) failures.push(`${c.name}: dispatch_key ${r.dispatch_key}`);
    }
    expect(failures).toEqual([]);
  });

  test('each DLQ record is in the topic’s own tenant DLQ and preserves the original bytes (payload or payload_base64)', () => {
    for (const [i, c] of bad.entries()) {
      const r = dlq.find((x) => x.source.offset === String(2 * i))!;
      expect({ name: c.name, tenant: r.tenant_id, topic: r.topic, source: r.source.topic }).toEqual({
        name: c.name,
        tenant: h.tenant,
        topic: topics.dlq(h.tenant),
        source: topics.dispatch(h.tenant),
      });
      expect(r.workflow_id).toBeNull();
      const payload = dlqRecordPayload(r);
      if (c.value === null) {
        expect(payload).toBeNull();
        expect(r.payload_base64).toBeUndefined();
      } else {
        expect({ name: c.name, equal: Buffer.from(payload!).equals(c.value) }).toEqual({
          name: c.name,
          equal: true,
        });
        // Text when the bytes are UTF-8, base64 only when they are not.
        expect({ name: c.name, base64: r.payload_base64 !== undefined }).toEqual({
          name: c.name,
          base64: !isUtf8(c.value),
        });
      }
    }
  });

  test('the valid record after each malformed one, and every hostile-but-valid record, is relayed exactly once', async () => {
    await waitFor(
      async () =>
        metricValue(await ingester.metrics(), 'poimen_dispatch_records_total', {
          tenant: h.tenant,
          outcome: 'started',
        }) === validKeys.length,
      { what: `${validKeys.length} starts` },
    );
    const counts = validKeys.map((k) => [k.slice(0, 40), h.api.requestsFor(k).length]);
    expect(counts.filter(([, n]) => n !== 1)).toEqual([]);
    expect(h.api.requests).toHaveLength(validKeys.length);
    expect(h.api.runs.size).toBe(validKeys.length);
    await h.expectCommittedAtLogEnd();
  });

  test('hostile records are relayed under the value’s dispatch_key with the relay’s own headers; an invalid traceparent is dropped', () => {
    const call = (key: string) => h.api.requestsFor(key)[0]!;
    for (const c of hostile) {
      const req = call(c.dispatchKey);
      expect({
        name: c.name,
        tenant: req.headers['x-tenant-id'],
        idem: req.headers['idempotency-key'],
      }).toEqual({
        name: c.name,
        tenant: h.tenant,
        idem: c.dispatchKey,
      });
      expect(req.headers['content-type']).toBe('application/json');
      expect(req.headers.authorization).toBeUndefined();
      expect(Object.keys(req.json as object)).toEqual(['workflow_ref', 'input', 'goal_id', 'dispatch_key']);
    }
    expect(call('hv-lying-headers').headers['content-encoding']).toBeUndefined();
    for (const k of [
      'hv-trace-garbage',
      'hv-trace-zero',
      'hv-trace-crlf',
      'hv-trace-upper',
      'hv-trace-twice',
      'hv-lying-headers',
    ])
      expect({ k, traceparent: call(k).headers.traceparent }).toEqual({ k, traceparent: undefined });
    expect(call('hv-trace-valid').headers.traceparent).toBe(
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    );
    expect(call('hv-trace-future').headers.traceparent).toBe(
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    );
  });

  test('edge values pass through: 512-deep input, lone-surrogate escapes, __proto__ keys, big integers digit for digit', async () => {
    const body = (key: string) => h.api.requestsFor(key)[0]!.body;
    expect(body('hv-deep-512')).toContain(`"input":${'['.repeat(512)}${']'.repeat(512)},`);
    expect(body('hv-input-surrogate')).toContain('"input":"\\ud800"');
    expect(body('hv-input-proto')).toContain('"input":{"__proto__":{"polluted":true}}');
    // 2^53 + 1: a double would round it to ...992; the record's text reaches the API unchanged.
    expect(body('hv-big-int')).toContain('"input":{"n":9007199254740993}');
    expect((h.api.requestsFor('hv-ref-emoji')[0]!.json as { workflow_ref: string }).workflow_ref).toBe(
      '😀'.repeat(512),
    );
    // Too big for a Keyword search attribute: started without it rather than refused by Temporal forever.
    const desc = await h.client.workflow.getHandle(h.wfId('hv-ref-emoji')).describe();
    const attrs = desc.typedSearchAttributes.getAll().map((p) => p.key.name);
    expect(attrs).toContain('DispatchKey');
    expect(attrs).not.toContain('WorkflowRef');
    const goal = await h.client.workflow.getHandle(h.wfId('hv-goal-control')).describe();
    expect(goal.typedSearchAttributes.getAll().map((p) => p.key.name)).not.toContain('GoalId');
  });

  test('the ingester never crashed or restarted its consumer, stays healthy, and the group has no lag', async () => {
    expect(ingester.child.pid).toBe(ingesterPid);
    expect(ingester.child.exitCode).toBeNull();
    expect((await fetch(`http://127.0.0.1:${ingester.metricsPort}/healthz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${ingester.metricsPort}/readyz`)).status).toBe(200);
    // From the first record on (a fresh broker may make the group join retry before that), no consumer
    // restart and no record retried as an infrastructure failure.
    const log = fs.readFileSync(ingester.logFile, 'utf8');
    const firstRecord = log.indexOf('"msg":"dead-lettered"');
    // Without the line, slice(-1) would keep one character and the check below would pass on nothing.
    expect(firstRecord).toBeGreaterThanOrEqual(0);
    const fromFirstRecord = log.slice(firstRecord);
    expect(fromFirstRecord).not.toMatch(
      /consumer crashed|Restarting the consumer|could not start or dead-letter/,
    );

    await h.expectCommittedAtLogEnd();
    const metrics = await ingester.metrics();
    expect(
      metricValue(metrics, 'poimen_dispatch_records_total', { tenant: h.tenant, outcome: 'dead_lettered' }),
    ).toBe(bad.length);
    expect(metricSum(metrics, 'dlq_messages_sent_total', { topic: topics.dlq(h.tenant) })).toBe(bad.length);
  });
});

function isUtf8(bytes: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}
