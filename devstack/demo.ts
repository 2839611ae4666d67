/**
 * The demo (`npm run demo`): the relay end to end on the local stack. Starts the stack, a sample runs API, the
 * relay's two real processes, publishes a handful of dispatches (one duplicate, one malformed, one the API
 * refuses, one that needs a retry), waits for each outcome, and prints what happened and where to look.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { type StackConfig, childEnv } from './config';
import { topics, workflowId, type DlqRecord } from 'poimen-relay/internal/contract/index';
import { SampleRunsApi } from './sampleRunsApi';
import { type RelayProcess, metricValue, startRelayProcess } from './relayProcess';
import { readDeadLetters } from 'poimen-relay/internal/kafka/dlqReader';
import type { KafkaClient } from 'poimen-relay/internal/kafka/port';
import { ensureTopics, tenantTopicSpecs } from 'poimen-relay/internal/kafka/topics';
import { freePort } from './ports';
import { poll, waitUntil } from 'poimen-relay/internal/poll';
import { portInUse } from './stack/processes';
import type { Progress } from './stack/progress';
import type { LocalStack } from './stack/stack';

const TENANT = 'demo';

async function pickPort(preferred: number): Promise<number> {
  if (!(await portInUse(preferred))) return preferred;
  return freePort();
}

export interface DemoReport {
  lines: string[];
  ok: boolean;
}

export async function runDemo(
  stack: LocalStack,
  kafka: KafkaClient,
  cfg: StackConfig,
  progress: Progress,
): Promise<DemoReport> {
  const run = crypto.randomBytes(3).toString('hex');
  const key = (name: string) => `demo-${run}-${name}`;
  const api = await SampleRunsApi.start({ port: await pickPort(8080) });
  api.answerFirst(key('refused'), { status: 422, body: '{"error":"unknown workflow_ref nope@v0"}' });
  api.answerFirst(key('flaky'), { status: 503, retryAfter: '1' });
  progress(`sample runs API on ${api.url}`);

  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, tenantTopicSpecs(TENANT, { partitions: 3 }));
  await admin.disconnect();

  const env = childEnv({
    KAFKA_BROKERS: stack.services.kafka.address,
    TEMPORAL_ADDRESS: stack.services.temporal.address,
    TEMPORAL_NAMESPACE: cfg.namespace,
    RUNS_API_URL: api.url,
    // The demo's own tenant, group and queue: it must not drain (or replay) anyone else's topics.
    DISPATCH_TOPIC_PATTERN: `^poimen\\.${TENANT}\\.dispatch$`,
    KAFKA_GROUP_ID: 'poimen-demo',
    TEMPORAL_TASK_QUEUE: 'poimen-demo',
    RETRY_INITIAL_INTERVAL_MS: '500',
    RETRY_MAX_ATTEMPTS: '5',
    POIMEN_TOPIC_REFRESH_MS: '2000',
    POIMEN_LAG_REFRESH_MS: '1000',
  });
  const logs = path.join(cfg.stateDir, 'logs');
  const processes: RelayProcess[] = [];
  const connection = await Connection.connect({ address: stack.services.temporal.address });
  const client = new Client({ connection, namespace: cfg.namespace });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  try {
    for (const role of ['worker', 'ingest'] as const) {
      const metricsPort = await pickPort(role === 'ingest' ? 9464 : 9465);
      progress(
        `starting poimen-relay ${role} (metrics :${metricsPort}, log ${path.join(logs, `demo-${role}.log`)})`,
      );
      processes.push(
        await startRelayProcess({ role, env, metricsPort, logFile: path.join(logs, `demo-${role}.log`) }),
      );
    }
    const [worker, ingester] = processes as [RelayProcess, RelayProcess];

    const dispatch = (name: string, extra: object = {}) =>
      JSON.stringify({
        workflow_ref: 'onboarding@v3',
        input: { user: 42, plan: 'pro' },
        goal_id: 'g-17',
        dispatch_key: key(name),
        ...extra,
      });
    const samples: [string, string][] = [
      ['welcome', dispatch('welcome')],
      ['report', dispatch('report', { workflow_ref: 'weekly-report@v1', goal_id: null })],
      ['flaky (API answers 503 first)', dispatch('flaky')],
      ['refused (API answers 422)', dispatch('refused')],
      ['malformed (not JSON)', `{"workflow_ref": "onboarding@v3", "dispatch_key": "${key('broken')}", `],
    ];
    await producer.connect();
    for (const [, value] of samples) {
      await producer.send({
        topic: topics.dispatch(TENANT),
        acks: -1,
        messages: [{ key: `${TENANT}:demo`, value }],
      });
    }
    progress(`published ${samples.length} records to ${topics.dispatch(TENANT)}`);
    // Redelivery of a dispatch that already ran: Temporal's id reuse policy absorbs it, no second run.
    await waitUntil(
      () =>
        client.workflow
          .getHandle(workflowId(TENANT, key('welcome')))
          .result()
          .then(
            () => true,
            () => false,
          ),
      60_000,
      250,
    );
    await producer.send({
      topic: topics.dispatch(TENANT),
      acks: -1,
      messages: [{ key: `${TENANT}:demo`, value: dispatch('welcome') }],
    });
    samples.push(['welcome (again: a duplicate)', dispatch('welcome')]);
    progress('published the welcome dispatch again (a redelivery)');

    const expectedDlq = 2;
    const settled = await waitUntil(
      async () => {
        const m = await ingester.metrics();
        const handled = ['started', 'duplicate', 'dead_lettered']
          .map((outcome) => metricValue(m, 'poimen_dispatch_records_total', { tenant: TENANT, outcome }) ?? 0)
          .reduce((a, b) => a + b, 0);
        const dlq =
          (metricValue(m, 'dlq_messages_sent_total', { topic: topics.dlq(TENANT) }) ?? 0) +
          (metricValue(await worker.metrics(), 'dlq_messages_sent_total', { topic: topics.dlq(TENANT) }) ??
            0);
        return handled >= samples.length && dlq >= expectedDlq && api.runs.has(key('flaky'));
      },
      120_000,
      500,
    );

    const lines: string[] = ['', 'What happened:'];
    for (const name of ['welcome', 'report', 'flaky', 'refused']) {
      const handle = client.workflow.getHandle(workflowId(TENANT, key(name)));
      const desc = await handle.describe().catch(() => undefined);
      const calls = api.callsFor(key(name));
      lines.push(
        `  ${key(name).padEnd(24)} workflow ${(desc?.status.name ?? 'missing').padEnd(10)} ` +
          `API calls ${calls.map((c) => c.status).join(', ') || 'none'}${api.runs.has(key(name)) ? `  → run ${api.runs.get(key(name))}` : ''}`,
      );
    }
    lines.push(
      `  duplicate of ${key('welcome')}: no second run (runs API saw ${api.callsFor(key('welcome')).length} call)`,
    );
    const dlq = await readDlq(kafka, expectedDlq, `demo-${run}-`);
    lines.push('', `Dead letters in ${topics.dlq(TENANT)}:`);
    for (const rec of dlq)
      lines.push(`  ${rec.type.padEnd(18)} key ${String(rec.dispatch_key).padEnd(24)} ${rec.error}`);
    const m = await ingester.metrics();
    lines.push(
      '',
      'Metrics (Prometheus text at /metrics while the processes run):',
      `  poimen_dispatch_records_total{tenant="demo"}: started ${metricValue(m, 'poimen_dispatch_records_total', { tenant: TENANT, outcome: 'started' }) ?? 0}, duplicate ${metricValue(m, 'poimen_dispatch_records_total', { tenant: TENANT, outcome: 'duplicate' }) ?? 0}, dead_lettered ${metricValue(m, 'poimen_dispatch_records_total', { tenant: TENANT, outcome: 'dead_lettered' }) ?? 0}`,
      `  runs API calls by the worker: ${api.calls.length}; runs created: ${api.runs.size}`,
      '',
      'Where to look:',
      `  Temporal Web UI: http://127.0.0.1:${cfg.temporalUiPort}/namespaces/${cfg.namespace}/workflows?query=${encodeURIComponent(`TenantId="${TENANT}"`)}`,
      `  a failed dispatch: http://127.0.0.1:${cfg.temporalUiPort}/namespaces/${cfg.namespace}/workflows/${encodeURIComponent(workflowId(TENANT, key('refused')))}`,
      `  relay logs: ${worker.logFile}, ${ingester.logFile}`,
      '  run the relay yourself: npx poimen-relay worker & npx poimen-relay ingest  (metrics on :9465 and :9464)',
      '  stop the local stack: npm run stack:down',
    );
    const ok =
      settled &&
      dlq.length === expectedDlq &&
      ['welcome', 'report', 'flaky'].every((n) => api.runs.has(key(n))) &&
      !api.runs.has(key('refused')) &&
      api.callsFor(key('welcome')).length === 1;
    return { lines, ok };
  } finally {
    await producer.disconnect().catch(() => undefined);
    for (const p of processes.reverse()) await p.stop();
    await connection.close();
    await api.close();
  }
}

/** This run's dead letters: their dispatch key (or, for a malformed record, its payload) names the run. */
async function readDlq(kafka: KafkaClient, expected: number, marker: string): Promise<DlqRecord[]> {
  // Read without committing (a throwaway group) so the DLQ stays as it is for `dlq list` / `dlq replay`.
  const admin = kafka.admin();
  await admin.connect();
  let found: DlqRecord[] = [];
  try {
    // A read that fails (its consumer crashed) is tried again, as the streaming consumer this replaced did.
    await poll(
      async () => {
        found = (await readDeadLetters(kafka, admin, topics.dlq(TENANT), { timeoutMs: 30_000 }))
          .map((d) => d.record)
          .filter(
            (rec): rec is DlqRecord => !!rec && (rec.dispatch_key ?? rec.payload ?? '').includes(marker),
          );
        return found.length >= expected;
      },
      { timeoutMs: 30_000, intervalMs: 500, retryErrors: true },
    );
  } finally {
    await admin.disconnect();
  }
  return found;
}
