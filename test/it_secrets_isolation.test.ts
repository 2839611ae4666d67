/**
 * Secrets and tenant isolation end to end: real Kafka, real Temporal, the relay's real processes.
 *
 * - The API token never appears in anything a run produces, even when the API echoes it back in error bodies.
 * - The tenant comes only from the topic; a record claiming another tenant is dead-lettered in its own tenant's
 *   DLQ; workflow ids never collide across tenants; a tenant name cannot widen a topic pattern.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { WorkflowNotFoundError } from '@temporalio/client';
import { topics, workflowId, type DlqRecord } from '../src/contract';
import { ensureTopics, tenantTopicSpecs } from '../src/kafka/topics';
import { runCli } from './support/cli';
import { uniqueTenant } from './support/names';
import { type Harness, createHarness } from './support/relayHarness';
import type { RelayProcess } from './support/relay';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

/** Every string in a value, with byte arrays (Temporal payloads) decoded as UTF-8. */
function allText(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (value instanceof Uint8Array) out.push(Buffer.from(value).toString('utf8'));
  else if (Array.isArray(value)) for (const v of value) allText(v, out);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) allText(v, out);
  return out;
}

describe('secrets: the API token never leaves the worker', () => {
  const token = `tok-${crypto.randomBytes(24).toString('base64url')}`;
  let h: Harness;
  let worker: RelayProcess;
  let ingester: RelayProcess;
  let dlq: DlqRecord[];
  const succeeded = ['sec-401', 'sec-403', 'sec-500-echo', 'sec-503-cut', 'sec-drop', 'sec-429-echo'];
  const failed = ['sec-400-echo', 'sec-422-cut', 'sec-exhausted'];

  beforeAll(async () => {
    // sec-exhausted spends a cap of its three scripted answers (the shipped policy has none); failures scripted
    // for nine keys at once must not open the process-wide breaker, which would change each key's answers.
    h = await createHarness({
      env: {
        RUNS_API_TOKEN: token,
        RETRY_MAX_ATTEMPTS: '3',
        POIMEN_BREAKER_FAILURES: '1000',
        LOG_LEVEL: 'debug',
      },
    });
    worker = await h.startWorker();
    ingester = await h.startIngester();
    const echo = (status: number) => ({ kind: 'status' as const, status, echoHeaders: true });
    // Bodies that put the bare token right where the 200-character excerpt cuts.
    const cut = (status: number, pad: number) => ({
      kind: 'status' as const,
      status,
      body: `${'x'.repeat(pad)} token={{token}} auth={{authorization}}`,
    });
    h.api
      .scriptFor('sec-401', echo(401))
      .scriptFor('sec-403', echo(403), echo(403))
      .scriptFor('sec-500-echo', echo(500))
      .scriptFor('sec-503-cut', cut(503, 185), cut(503, 195))
      .scriptFor('sec-drop', { kind: 'drop' })
      .scriptFor('sec-429-echo', { ...echo(429), retryAfter: '0' })
      .scriptFor('sec-400-echo', { ...echo(400), body: 'auth={{authorization}} ' })
      .scriptFor('sec-422-cut', cut(422, 190))
      .scriptFor('sec-exhausted', echo(503), cut(502, 180), echo(500));
    for (const k of [...succeeded, ...failed]) await h.publish(h.dispatchValue(k));
    // And one the ingester dead-letters (tenant mismatch), so its output is part of the run too.
    await h.publish(h.dispatchValue('sec-mismatch', { tenant_id: 'other' }));

    for (const k of succeeded) {
      const handle = h.client.workflow.getHandle(h.wfId(k));
      await waitFor(() => handle.describe().then(() => true), { what: `${k} to start` });
      await handle.result();
    }
    dlq = await h.readDlq(failed.length + 1, 120_000);
  });

  afterAll(async () => {
    await h?.cleanup();
  });

  test('the token was really sent, and echoed back by the API in error bodies', () => {
    const sent = h.api.requests.filter((r) => r.headers.authorization === `Bearer ${token}`);
    expect(sent.length).toBe(h.api.requests.length);
    expect(h.api.requestsFor('sec-exhausted')).toHaveLength(3);
    expect(dlq.map((r) => r.dispatch_key).sort()).toEqual([...failed, 'sec-mismatch'].sort());
    // The echo reached the relay and was redacted there.
    expect(dlq.find((r) => r.dispatch_key === 'sec-400-echo')!.error).toMatch(/auth=Bearer <redacted>/);
  });

  test('no piece of the token (nor "Bearer <token>") is in logs, DLQ records, metrics, dispatch status or workflow histories', async () => {
    const artifacts: Record<string, string> = {
      'worker log': fs.readFileSync(worker.logFile, 'utf8'),
      'ingester log': fs.readFileSync(ingester.logFile, 'utf8'),
      'worker metrics': await worker.metrics(),
      'ingester metrics': await ingester.metrics(),
      'DLQ records': JSON.stringify(dlq),
    };
    for (const k of [...succeeded, ...failed]) {
      const status = await runCli(['dispatch', 'status', '--tenant', h.tenant, '--key', k, '--json'], h.env);
      expect(status.code).toBe(0);
      artifacts[`dispatch status ${k}`] = status.stdout + status.stderr;
      const history = await h.client.workflow.getHandle(h.wfId(k)).fetchHistory();
      artifacts[`history ${k}`] = allText(history).join('\n');
      const described = await h.client.workflow.getHandle(h.wfId(k)).describe();
      artifacts[`describe ${k}`] = allText(described.raw).join('\n');
    }
    const list = await runCli(['dlq', 'list', '--tenant', h.tenant, '--json'], h.env);
    expect(list.code).toBe(0);
    artifacts['dlq list'] = list.stdout + list.stderr;
    // The failures are there to be seen: the histories carry the (redacted) echoed bodies.
    expect(artifacts['history sec-400-echo']).toMatch(/runs API answered 400/);
    expect(artifacts['worker log']).toMatch(/runs API answered 401/);

    const leaks: string[] = [];
    for (const [name, text] of Object.entries(artifacts)) {
      // Any 12-character window: a token cut by an excerpt must not leak its first part either.
      for (let i = 0; i + 12 <= token.length; i++) {
        if (text.includes(token.slice(i, i + 12))) {
          leaks.push(`${name}: ${token.slice(i, i + 12)}`);
          break;
        }
      }
    }
    expect(leaks).toEqual([]);
  });
});

describe('tenant isolation', () => {
  let h: Harness;
  let ingester: RelayProcess;
  const tenantA = uniqueTenant();
  // A second tenant whose name starts with the first: the shape that could confuse a naive id scheme.
  const tenantB = `${tenantA}-x`;
  const upper = tenantA.toUpperCase();
  const dotted = `${tenantA}.evil`;
  const adversarialKeys = (other: string) => [
    'shared-1',
    `${other}:k`,
    `x:k`,
    `-x:k`,
    `../${other}/k`,
    `dispatch:${other}:k`,
    'k',
  ];

  beforeAll(async () => {
    h = await createHarness({
      tenant: tenantA,
      api: { tenantScoped: true },
      env: {
        // A custom pattern broad enough to match topics whose tenant segment is not a valid tenant.
        DISPATCH_TOPIC_PATTERN: `^poimen\\.(${tenantA}|${tenantB}|${upper}|${tenantA}\\.evil)\\.dispatch$`,
      },
    });
    const admin = h.kafka.admin();
    await admin.connect();
    await ensureTopics(admin, tenantTopicSpecs(tenantB, { partitions: 1 }));
    await ensureTopics(admin, [
      { topic: `poimen.${upper}.dispatch`, numPartitions: 1 },
      { topic: `poimen.${dotted}.dispatch`, numPartitions: 1 },
    ]);
    await admin.disconnect();
    await h.startWorker();
    ingester = await h.startIngester();
  });

  afterAll(async () => {
    await h?.cleanup();
  });

  test('a record claiming another tenant is dead-lettered as tenant_mismatch in its topic’s tenant DLQ, never the claimed one’s', async () => {
    await h.publish(h.dispatchValue('claims-b', { tenant_id: tenantB }));
    const [rec] = await h.readDlq(1);
    expect(rec).toMatchObject({
      type: 'tenant_mismatch',
      tenant_id: tenantA,
      topic: topics.dlq(tenantA),
      dispatch_key: 'claims-b',
    });
    expect(rec!.error).toBe(`tenant_id "${tenantB}" does not match the topic's tenant "${tenantA}"`);
    const admin = h.kafka.admin();
    await admin.connect();
    const [high] = await admin.fetchTopicOffsets(topics.dlq(tenantB));
    await admin.disconnect();
    expect(high!.high).toBe('0');
    await expect(h.client.workflow.getHandle(workflowId(tenantB, 'claims-b')).describe()).rejects.toThrow(
      WorkflowNotFoundError,
    );
    expect(h.api.requestsFor('claims-b')).toHaveLength(0);
  });

  test('the same and adversarial dispatch_keys under two tenants make one run each, with distinct workflow ids and the right x-tenant-id', async () => {
    const sent: [string, string][] = [
      ...adversarialKeys(tenantB).map((k): [string, string] => [tenantA, k]),
      ...adversarialKeys(tenantA).map((k): [string, string] => [tenantB, k]),
    ];
    for (const [tenant, key] of sent)
      await h.publish(h.dispatchValue(key), { topic: topics.dispatch(tenant), key: `${tenant}:${key}` });
    const ids = sent.map(([t, k]) => workflowId(t, k));
    expect(new Set(ids).size).toBe(sent.length);
    for (const [tenant, key] of sent) {
      const handle = h.client.workflow.getHandle(workflowId(tenant, key));
      await waitFor(() => handle.describe().then(() => true), {
        what: `${workflowId(tenant, key)} to start`,
      });
      expect(await handle.result()).toMatchObject({ admission: 'created' });
      const desc = await handle.describe();
      expect(desc.typedSearchAttributes.getAll().find((p) => p.key.name === 'TenantId')?.value).toBe(tenant);
    }
    const calls = h.api.requests.map((r) => [
      r.headers['x-tenant-id'],
      (r.json as { dispatch_key: string }).dispatch_key,
    ]);
    expect(calls.filter(([, k]) => k !== 'claims-b').sort()).toEqual(sent.map(([t, k]) => [t, k]).sort());
    expect(h.api.runs.size).toBe(sent.length);
    expect(h.api.requests.every((r) => r.answer === 201)).toBe(true);
  });

  test('a topic matching a custom DISPATCH_TOPIC_PATTERN with an invalid tenant segment is not consumed, under any tenant', async () => {
    for (const topic of [`poimen.${upper}.dispatch`, `poimen.${dotted}.dispatch`])
      await h.publish(h.dispatchValue('invalid-tenant-topic'), { topic });
    await h.publish(h.dispatchValue('after-invalid-topics'));
    const handle = h.client.workflow.getHandle(h.wfId('after-invalid-topics'));
    await waitFor(() => handle.describe().then(() => true), { what: 'the valid dispatch to start' });
    await handle.result();
    const log = await waitFor(
      () => {
        const text = fs.readFileSync(ingester.logFile, 'utf8');
        return (
          text.includes(`poimen.${upper}.dispatch`) && text.includes(`poimen.${dotted}.dispatch`) && text
        );
      },
      { what: 'the ingester to report both topics as ignored' },
    );
    const warnings = log.split('\n').filter((l) => l.includes('is not poimen.<tenant>.dispatch; ignored'));
    // Reported once per topic, not at every topic refresh.
    expect(warnings).toHaveLength(2);
    expect(h.api.requestsFor('invalid-tenant-topic')).toHaveLength(0);
    for (const bogus of [upper, dotted, `${tenantA}.evil`])
      await expect(
        h.client.workflow.getHandle(workflowId(bogus, 'invalid-tenant-topic')).describe(),
      ).rejects.toThrow(WorkflowNotFoundError);
  });

  test.each([
    ['topics apply', ['topics', 'apply', '--tenant', '.*']],
    ['topics apply (several)', ['topics', 'apply', '--tenant', 'acme', '--tenant', 'acme.dispatch']],
    ['dlq list', ['dlq', 'list', '--tenant', 'a.b']],
    ['dlq replay', ['dlq', 'replay', '--tenant', 'ACME', '--dry-run']],
    ['dispatch status', ['dispatch', 'status', '--tenant', '-acme', '--key', 'k']],
    ['dispatch status (64 chars)', ['dispatch', 'status', '--tenant', 'a'.repeat(64), '--key', 'k']],
    ['dlq list (empty)', ['dlq', 'list', '--tenant', '']],
    ['dlq list (leading _)', ['dlq', 'list', '--tenant', '_acme']],
  ])('%s refuses a tenant that would widen a topic pattern, with one clear line', async (_name, args) => {
    const res = await runCli(args, h.env, 60_000);
    expect(res.code).not.toBe(0);
    expect(res.stdout).toBe('');
    const lines = res.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/--tenant ".*" must match \^\[a-z0-9\]\[a-z0-9_-\]\{0,62\}\$/);
  });
});
