/* eslint-disable max-lines -- the operator commands share one stack set-up and tenant topics */
/**
 * Operator commands on the real stack: topics apply/list, temporal setup, dlq list/replay, dispatch status,
 * and the DLQ backlog metrics. Replaying can never cause a duplicate run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { topics, type DlqRecord } from '../src/contract';
import { type CliResult, runCli, cliEnv } from './support/cli';
import { uniqueName, uniqueTenant } from './support/names';
import { metricValue } from './support/relay';
import { type Harness, createHarness } from './support/relayHarness';
import { bareNamespace } from './support/temporalOps';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

let h: Harness | undefined;
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});

async function cli(args: string[], env: NodeJS.ProcessEnv = cliEnv()): Promise<CliResult> {
  return runCli(args, env, 120_000);
}

function json<T>(res: CliResult): T {
  if (res.code !== 0) throw new Error(`exit ${res.code}: ${res.stderr}`);
  return JSON.parse(res.stdout) as T;
}

describe('topics', () => {
  test('topics apply declares .dispatch, .events and .dispatch.dlq (14-day retention); applying again is success', async () => {
    const tenant = uniqueTenant();
    const first = json<{ topic: string; action: string }[]>(
      await cli(['topics', 'apply', '--tenant', tenant, '--partitions', '2', '--json']),
    );
    expect(first).toEqual([
      { topic: topics.dispatch(tenant), action: 'created', differences: [], warnings: [] },
      { topic: topics.events(tenant), action: 'created', differences: [], warnings: [] },
      { topic: topics.dlq(tenant), action: 'created', differences: [], warnings: [] },
    ]);
    const again = await cli(['topics', 'apply', '--tenant', tenant, '--partitions', '2']);
    expect(again.code).toBe(0);
    expect(
      again.stdout
        .trim()
        .split('\n')
        .map((l) => l.split(/\s+/)[0]),
    ).toEqual(['unchanged', 'unchanged', 'unchanged']);

    const list = json<{ topic: string; partitions: number; retentionMs: string | null }[]>(
      await cli(['topics', 'list', '--json']),
    );
    expect(list.find((t) => t.topic === topics.dlq(tenant))).toMatchObject({
      partitions: 2,
      // contract §2: 14 days, as the literal the SPEC gives (not the code's own constant).
      retentionMs: '1209600000',
    });
    expect(list.find((t) => t.topic === topics.dispatch(tenant))).toMatchObject({ partitions: 2 });
  });

  test('topics apply declares several --tenant at once with the --replication-factor given; one the cluster cannot hold is refused with one line', async () => {
    const tenants = [uniqueTenant(), uniqueTenant()];
    const applied = json<{ topic: string; action: string }[]>(
      await cli([
        'topics',
        'apply',
        '--tenant',
        ...tenants,
        '--replication-factor',
        '1',
        '--partitions',
        '1',
        '--json',
      ]),
    );
    const names = tenants.flatMap((t) => [topics.dispatch(t), topics.events(t), topics.dlq(t)]);
    expect(applied.map((r) => [r.topic, r.action])).toEqual(names.map((n) => [n, 'created']));
    const list = json<
      { topic: string; partitions: number; replicationFactor: number; retentionMs: string | null }[]
    >(await cli(['topics', 'list', '--json']));
    for (const n of names) {
      expect(list.find((t) => t.topic === n)).toMatchObject({ partitions: 1, replicationFactor: 1 });
    }
    for (const t of tenants) {
      expect(list.find((l) => l.topic === topics.dlq(t))?.retentionMs).toBe('1209600000');
    }

    // The local stack has one broker: a replication factor of 2 cannot be met, and nothing is half-declared.
    const refusedTenant = uniqueTenant();
    const refused = await cli(['topics', 'apply', '--tenant', refusedTenant, '--replication-factor', '2']);
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(/^poimen-relay: .*replication factor.*2/i);
    const after = json<{ topic: string }[]>(await cli(['topics', 'list', '--json']));
    expect(after.filter((t) => t.topic.includes(refusedTenant))).toEqual([]);
  });

  test('a topic that exists with different settings is reported, not silently accepted', async () => {
    const tenant = uniqueTenant();
    expect((await cli(['topics', 'apply', '--tenant', tenant, '--partitions', '1'])).code).toBe(0);
    const res = await cli(['topics', 'apply', '--tenant', tenant, '--partitions', '3']);
    expect(res.code).toBe(3);
    expect(res.stdout).toContain(`differs   ${topics.dispatch(tenant)}: partitions 1 (declared 3)`);
    expect(res.stderr).toMatch(/3 topic\(s\) exist with settings that differ/);
  });

  test('a declarative file declares tenants and other DLQ topics (like the memory service ones) with 14-day retention', async () => {
    const tenant = uniqueTenant();
    const memoryDlq = uniqueName('poimen-memory-dlq');
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'topics-')), 'topics.yaml');
    fs.writeFileSync(
      file,
      `partitions: 1\nreplicationFactor: 1\ntenants: [${tenant}]\nextraTopics:\n  - name: ${memoryDlq}\n    config: { retention.ms: "1209600000" }\n`,
    );
    const res = json<{ topic: string; action: string }[]>(
      await cli(['topics', 'apply', '--file', file, '--json']),
    );
    expect(res.map((r) => [r.topic, r.action])).toEqual([
      [topics.dispatch(tenant), 'created'],
      [topics.events(tenant), 'created'],
      [topics.dlq(tenant), 'created'],
      [memoryDlq, 'created'],
    ]);
    const list = json<{ topic: string; retentionMs: string | null }[]>(
      await cli(['topics', 'list', '--json']),
    );
    expect(list.find((t) => t.topic === memoryDlq)?.retentionMs).toBe('1209600000');
  });

  test('min.insync.replicas is compared like any setting: one broker gives no min ISR, and a declared one the topic lacks is reported', async () => {
    // One broker: replication factor 1 and no topic-level min ISR, so the topic reads the broker's default (1).
    const tenant = uniqueTenant();
    expect((await cli(['topics', 'apply', '--tenant', tenant, '--partitions', '1'])).code).toBe(0);
    const created = uniqueName('it-min-isr');
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'topics-')), 'topics.yaml');
    fs.writeFileSync(
      file,
      `partitions: 1\nextraTopics:\n${[topics.dispatch(tenant), created].map((n) => `  - name: ${n}\n    config: { min.insync.replicas: "2" }\n`).join('')}`,
    );
    const first = await cli(['topics', 'apply', '--file', file]);
    expect(first.code).toBe(3);
    expect(first.stdout).toContain(
      `differs   ${topics.dispatch(tenant)}: min.insync.replicas 1 (declared 2)`,
    );
    expect(first.stdout).toContain(`created   ${created}`);
    // The topic created with its min ISR reads back as declared.
    const again = await cli(['topics', 'apply', '--file', file]);
    expect(again.stdout).toContain(`unchanged ${created}`);
  });

  test('a tenant name that could widen the topic pattern is refused with one line', async () => {
    for (const bad of ['a.b', '.*', 'Acme', 'x|y']) {
      const res = await cli(['topics', 'apply', '--tenant', bad]);
      expect(res.code).toBe(2);
      expect(res.stderr.trim()).toMatch(/^poimen-relay: invalid configuration: --tenant .* must match/);
    }
  });
});

describe('temporal setup', () => {
  test('registers the search attributes on a namespace that lacks them; the ingester refuses to start until then', async () => {
    const namespace = await bareNamespace('it-ns');
    const env = cliEnv({
      TEMPORAL_NAMESPACE: namespace,
      METRICS_PORT: '0',
      DISPATCH_TOPIC_PATTERN: '^poimen\\.nothing-here\\.dispatch$',
    });
    const refused = await runCli(['ingest'], env, 60_000);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `search attributes TenantId, DispatchKey, WorkflowRef, GoalId are not registered on namespace ${namespace}; run: poimen-relay temporal setup`,
    );

    const setup = await cli(['temporal', 'setup'], env);
    expect(setup.code).toBe(0);
    expect(setup.stdout).toContain(
      `namespace ${namespace}: registered [TenantId, DispatchKey, WorkflowRef, GoalId], already present []`,
    );
    const again = await cli(['temporal', 'setup'], env);
    expect(again.stdout).toContain(
      'registered [], already present [TenantId, DispatchKey, WorkflowRef, GoalId]',
    );
  });
});

/** Executions of a dispatch's workflow id in Temporal (visibility), whatever their run. */
async function executions(key: string): Promise<number> {
  let n = 0;
  for await (const _ of h!.client.workflow.list({ query: `WorkflowId = '${h!.wfId(key)}'` })) n++;
  return n;
}

describe('dlq and dispatch status', () => {
  test('dlq list reads dead letters without consuming them', async () => {
    h = await createHarness();
    await h.startWorker();
    await h.startIngester();
    h.api.scriptFor('refused-1', { kind: 'status', status: 422 });
    await h.publish('not json at all');
    await h.publish(h.dispatchValue('refused-1'));
    await h.readDlq(2);
    const env = cliEnv();
    const first = json<{ record: DlqRecord }[]>(
      await cli(['dlq', 'list', '--tenant', h.tenant, '--json'], env),
    );
    const second = json<{ record: DlqRecord }[]>(
      await cli(['dlq', 'list', '--tenant', h.tenant, '--json'], env),
    );
    expect(first.map((e) => e.record.type).sort()).toEqual(['dispatch_failure', 'malformed_dispatch']);
    expect(second).toEqual(first);
    const text = await cli(['dlq', 'list', '--tenant', h.tenant, '--limit', '1'], env);
    expect(text.stdout.trim().split('\n')).toHaveLength(1);
    // Listing leaves the replay group untouched.
    const admin = h.kafka.admin();
    await admin.connect();
    const groups = (await admin.listGroups()).groups.map((g) => g.groupId);
    await admin.disconnect();
    expect(groups.filter((g) => g.startsWith('poimen-relay-dlq-list-'))).toEqual([]);
    await h.expectCommittedAtLogEnd();
  });

  test('dlq replay: a succeeded dispatch is not run again, a failed one runs exactly once, malformed records stay unless forced', async () => {
    // Test speed: the DLQ gauges are read here, and the shipped 30 s refresh would add that wait to each read.
    h = await createHarness({ env: { POIMEN_DLQ_REFRESH_MS: '500' } });
    await h.startWorker();
    const ingester = await h.startIngester();
    // ok-1 succeeds; fail-1 is refused (422) and dead-lettered; one malformed record.
    h.api.scriptFor('fail-1', { kind: 'status', status: 422 });
    await h.publish(h.dispatchValue('ok-1'));
    await h.publish(h.dispatchValue('fail-1'));
    await h.publish('{"broken": ');
    await h.readDlq(2);
    // A dead letter for ok-1 as an earlier failed attempt would have left it (the dispatch since succeeded).
    const okHandle = h.client.workflow.getHandle(h.wfId('ok-1'));
    await waitFor(() => okHandle.result().then(() => true), { what: 'ok-1 to complete' });
    const [failRec] = (await h.readDlq(2)).filter((r) => r.type === 'dispatch_failure');
    await h.producer.send({
      topic: topics.dlq(h.tenant),
      messages: [
        {
          value: JSON.stringify({
            ...failRec,
            id: 'ok-1-old-failure',
            dispatch_key: 'ok-1',
            payload: h.dispatchValue('ok-1'),
          }),
        },
      ],
    });
    const dlqTopic = topics.dlq(h.tenant);
    await waitFor(
      async () => metricValue(await ingester.metrics(), 'dlq_consumer_lag', { topic: dlqTopic }) === 3,
      { what: 'dlq lag 3' },
    );
    expect(
      metricValue(await ingester.metrics(), 'dlq_oldest_message_age_seconds', { topic: dlqTopic }),
    ).toBeGreaterThanOrEqual(0);

    const dry = await cli(['dlq', 'replay', '--tenant', h.tenant, '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/would replay 2/);
    expect(h.api.runs.size).toBe(1);

    h.api.always(undefined);
    const replay = await cli(['dlq', 'replay', '--tenant', h.tenant, '--json']);
    expect(json(replay)).toEqual({
      examined: 3,
      replayed: 2,
      wouldReplay: 0,
      discarded: 0,
      filtered: 0,
      notReplayable: 1,
      unreadable: 0,
      tests: 0,
      alreadyHandled: 0,
      deferred: 0,
    });
    const failHandle = h.client.workflow.getHandle(h.wfId('fail-1'));
    await waitFor(async () => (await failHandle.describe()).status.name === 'COMPLETED', {
      what: 'fail-1 to complete after replay',
    });
    await waitFor(
      async () =>
        metricValue(await ingester.metrics(), 'poimen_dispatch_records_total', {
          tenant: h!.tenant,
          outcome: 'duplicate',
        }) === 1,
      {
        what: 'the replayed ok-1 to be refused as a duplicate',
      },
    );
    expect([...h.api.runs.keys()].sort()).toEqual(['fail-1', 'ok-1']);
    expect(h.api.requestsFor('ok-1')).toHaveLength(1);
    expect(h.api.requestsFor('fail-1').map((r) => r.answer)).toEqual([422, 201]);
    // The relay's own count, not the API double's: ok-1 ran once (the replay was refused by Temporal), fail-1
    // twice (the dead-lettered run and the replay).
    await waitFor(async () => (await executions('fail-1')) === 2, { what: "fail-1's two executions listed" });
    expect(await executions('ok-1')).toBe(1);
    // The malformed record was not replayed: it stays in the backlog (SQS redrive semantics) until it is
    // forced or discarded.
    await waitFor(
      async () => metricValue(await ingester.metrics(), 'dlq_consumer_lag', { topic: dlqTopic }) === 1,
      { what: 'dlq lag 1' },
    );

    // Running it again re-publishes nothing: progress is recorded in the group.
    expect(json(await cli(['dlq', 'replay', '--tenant', h.tenant, '--json']))).toMatchObject({
      examined: 1,
      replayed: 0,
      notReplayable: 1,
    });

    // Forced replay of the malformed record sends it straight back to the DLQ with the same reason.
    const forced = await cli([
      'dlq',
      'replay',
      '--tenant',
      h.tenant,
      '--from-beginning',
      '--type',
      'malformed_dispatch',
      '--force',
      '--json',
    ]);
    expect(json(forced)).toMatchObject({ replayed: 1 });
    const all = await h.readDlq(4);
    const malformed = all.filter((r) => r.type === 'malformed_dispatch');
    expect(malformed).toHaveLength(2);
    expect(malformed[1]!.error).toBe(malformed[0]!.error);
    expect(h.api.runs.size).toBe(2);
    // The succeeded dispatch's replay must not have posted again: its 409 would hide behind the one run.
    await h.expectCommittedAtLogEnd();
  });

  test('dispatch status shows a stuck dispatch (attempt, last error, HTTP status, next retry, Web UI link) and a completed one (the attempt it succeeded on, the failure before it)', async () => {
    // A cap for `dispatch status` to show (the shipped policy has none), and retries at most 2 s apart so the
    // stuck dispatch shows a next retry within the test rather than up to 5 min ahead.
    h = await createHarness({ env: { RETRY_MAX_ATTEMPTS: '50', RETRY_MAX_INTERVAL_MS: '2000' } });
    await h.startWorker();
    await h.startIngester();
    h.api.scriptFor(
      'stuck',
      ...Array.from({ length: 100 }, () => ({ kind: 'status' as const, status: 503, body: 'upstream busy' })),
    );
    await h.publish(h.dispatchValue('stuck'));
    await h.api.waitFor((a) => a.requestsFor('stuck').length >= 2, 60_000, 'two attempts');
    const env = cliEnv({ POIMEN_TEMPORAL_UI_URL: 'http://127.0.0.1:8233' });
    const stuck = await waitFor(
      async () => {
        const s = json<Record<string, unknown>>(
          await cli(['dispatch', 'status', '--tenant', h!.tenant, '--key', 'stuck', '--json'], env),
        );
        return (s.attempt as number) >= 2 && s.http_status === 503 && s.next_retry_at ? s : undefined;
      },
      { what: 'status to show the failing attempts' },
    );
    expect(stuck).toMatchObject({ found: true, status: 'RUNNING', http_status: 503, max_attempts: 50 });
    expect(stuck.last_error).toMatch(/503.*upstream busy/);
    expect(Date.parse(String(stuck.next_retry_at))).toBeGreaterThan(Date.now() - 60_000);
    expect(stuck.web_ui).toBe(
      `http://127.0.0.1:8233/namespaces/default/workflows/${encodeURIComponent(h.wfId('stuck'))}/${stuck.run_id}`,
    );
    const text = await cli(['dispatch', 'status', '--tenant', h.tenant, '--key', 'stuck'], env);
    expect(text.stdout).toMatch(/status\s+RUNNING/);
    expect(text.stdout).toMatch(/http status\s+503/);

    // Answered 503 once, then created: a completed dispatch says which attempt succeeded and what came before.
    h.api.scriptFor('fine', { kind: 'status', status: 503, body: 'upstream busy' });
    await h.publish(h.dispatchValue('fine'));
    await waitFor(
      async () =>
        (
          await h!.client.workflow
            .getHandle(h!.wfId('fine'))
            .describe()
            .catch(() => undefined)
        )?.status.name === 'COMPLETED',
      {
        what: 'fine to complete',
      },
    );
    const fine = json<Record<string, unknown>>(
      await cli(['dispatch', 'status', '--tenant', h.tenant, '--key', 'fine', '--json'], env),
    );
    expect(fine).toMatchObject({
      status: 'COMPLETED',
      result: { run_id: h.api.runs.get('fine'), admission: 'created' },
      attempt: 2,
      http_status: 503,
      attempts: [],
    });
    expect(fine.last_error).toMatch(/503.*upstream busy/);
    expect(h.api.requestsFor('fine').map((r) => r.answer)).toEqual([503, 201]);
    const missing = await cli(['dispatch', 'status', '--tenant', h.tenant, '--key', 'never-sent'], env);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toMatch(/no execution/);
    await h.expectCommittedAtLogEnd();
  });

  test('dlq_oldest_message_age_seconds reports the age of the oldest dead letter not yet replayed', async () => {
    // Test speed: the DLQ gauges are read here, and the shipped 30 s refresh would add that wait to each read.
    h = await createHarness({ env: { POIMEN_DLQ_REFRESH_MS: '500' } });
    const ingester = await h.startIngester();
    const threeDaysMs = 3 * 24 * 3600 * 1000;
    const dlqTopic = topics.dlq(h.tenant);
    await h.producer.send({
      topic: dlqTopic,
      messages: [
        { value: '{"id":"old"}', timestamp: String(Date.now() - threeDaysMs) },
        { value: '{"id":"new"}', timestamp: String(Date.now() - 60_000) },
      ],
    });
    const age = await waitFor(
      async () =>
        metricValue(await ingester.metrics(), 'dlq_oldest_message_age_seconds', { topic: dlqTopic }) ||
        undefined,
      {
        what: 'the oldest-age gauge',
      },
    );
    expect(age).toBeGreaterThan(threeDaysMs / 1000 - 120);
    expect(age).toBeLessThan(threeDaysMs / 1000 + 120);
    expect(metricValue(await ingester.metrics(), 'dlq_consumer_lag', { topic: dlqTopic })).toBe(2);
  });
});
