/* eslint-disable max-lines -- the Temporal operations share one set-up and recorded histories */
/**
 * What an operator does with a dispatch through Temporal's own tools, on real Kafka, real Temporal and the
 * relay's real processes: find a stuck dispatch in the Web UI (a real headless Chromium), reset a dead-lettered
 * one with the `temporal` CLI and with `tctl` once the API is fixed, pause and unpause a dispatch's retries,
 * and replay the histories of every dispatch outcome against the current workflow code.
 */
import fs from 'node:fs';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { type Browser, chromium } from 'playwright-core';
import { WORKFLOW_TYPE, topics } from '../src/contract';
import { dispatchStartOptions } from '../src/ingest/startDispatch';
import type { DispatchInput } from '../src/contract/workflow';
import { REPO_ROOT } from './support/cli';
import { historyJson, recordingHistories, writeHistoryFixture } from './support/recordHistories';
import { dispatchWorkflowId, historyFromJson } from './support/histories';
import { type Harness, createHarness } from './support/relayHarness';
import type { Fault } from '../devstack/runsApiDouble';
import {
  TCTL_BUILD_TIMEOUT_MS,
  provisionTctl,
  temporalCli,
  temporalUiUrl,
  tctl,
} from './support/temporalOps';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

const SCREENSHOTS = path.join(REPO_ROOT, 'test-artifacts', 'webui');
const CHROMIUM = process.env.POIMEN_TEST_CHROMIUM ?? '/usr/bin/chromium';
const { PendingActivityState, WorkflowExecutionStatus } = temporal.api.enums.v1;

beforeAll(provisionTctl, TCTL_BUILD_TIMEOUT_MS);

let h: Harness | undefined;
let browser: Browser | undefined;
/** Executions a test leaves running on purpose; terminated afterwards so the namespace stays clean. */
let stillRunning: string[] = [];
afterEach(async () => {
  await browser?.close();
  browser = undefined;
  for (const id of stillRunning) {
    await h?.client.workflow
      .getHandle(id)
      .terminate('test finished')
      .catch(() => undefined);
  }
  stillRunning = [];
  await h?.cleanup();
  h = undefined;
});

/** A harness whose dispatch stays in retries for minutes: the API answers 503 to every call. */
async function stuckHarness(): Promise<Harness> {
  // Retries every 2 s at most (the pause test measures against it; the shipped 5 min ceiling would stall it), and
  // a cap of 50 so a stuck dispatch the test leaves behind ends within minutes, not the 24 h budget.
  const harness = await createHarness({ env: { RETRY_MAX_ATTEMPTS: '50', RETRY_MAX_INTERVAL_MS: '2000' } });
  harness.api.always({ kind: 'status', status: 503, body: 'upstream busy' });
  return harness;
}

async function waitForExecution(harness: Harness, key: string) {
  const handle = harness.client.workflow.getHandle(harness.wfId(key));
  await waitFor(() => handle.describe().then(() => true), { what: `workflow ${harness.wfId(key)} to exist` });
  return handle;
}

/** Publishes a dispatch that the API refuses once with a 422 (non-retryable), so it is dead-lettered. */
async function publishRefused(harness: Harness, key: string): Promise<void> {
  harness.api.scriptFor(key, { kind: 'status', status: 422, body: 'unknown workflow_ref' });
  await harness.publish(harness.dispatchValue(key));
}

/**
 * Waits for the refused dispatch to end Failed with its dead letter; returns the failed run's id. `dlqRecords`
 * is how many dead letters the tenant's DLQ holds by then (other dispatches of the test may add theirs).
 */
async function expectDeadLettered(harness: Harness, key: string, dlqRecords = 1): Promise<string> {
  const handle = await waitForExecution(harness, key);
  await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
  const failed = await handle.describe();
  expect(failed.status.name).toBe('FAILED');
  const dlq = await harness.readDlq(dlqRecords);
  expect(dlq).toHaveLength(dlqRecords);
  const mine = dlq.filter((r) => r.dispatch_key === key);
  expect(mine).toHaveLength(1);
  expect(mine[0]).toMatchObject({
    type: 'dispatch_failure',
    workflow_id: harness.wfId(key),
    run_id: failed.runId,
    http_status: 422,
  });
  expect(harness.api.requestsFor(key).map((r) => r.answer)).toEqual([422]);
  expect(harness.api.runs.has(key)).toBe(false);
  return failed.runId;
}

/** After a reset: the new run called the API once more, created the run, and completed. */
async function expectResetRunCompleted(harness: Harness, key: string, failedRunId: string, newRunId: string) {
  expect(newRunId).not.toBe(failedRunId);
  const handle = harness.client.workflow.getHandle(harness.wfId(key), newRunId);
  expect(await handle.result()).toEqual({ run_id: harness.api.runs.get(key), admission: 'created' });
  expect((await handle.describe()).status.name).toBe('COMPLETED');
  expect((await harness.client.workflow.getHandle(harness.wfId(key)).describe()).runId).toBe(newRunId);
  expect(harness.api.requestsFor(key).map((r) => r.answer)).toEqual([422, 201]);
  expect(harness.api.runs.size).toBe(1);
}

describe('operating dispatches with Temporal tools', () => {
  test('the Web UI, in a real browser, finds a dispatch stuck in retries by its search attributes and shows its pending postRun attempt with the 503', async () => {
    h = await stuckHarness();
    await h.startWorker();
    await h.startIngester();
    const key = 'stuck-webui';
    const id = h.wfId(key);
    stillRunning.push(id);
    await h.publish(h.dispatchValue(key));
    await h.api.waitFor((a) => a.requestsFor(key).length >= 2, 60_000, 'two failed attempts');
    const callsBefore = h.api.requestsFor(key).length;

    if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    page.setDefaultTimeout(30_000);
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    const shot = (name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`) });

    // 1. The workflow list, filtered the way an operator looks a dispatch up: by tenant and dispatch key.
    const query = `TenantId="${h.tenant}" AND DispatchKey="${key}"`;
    const summaryColumns = { TenantId: h.tenant, WorkflowRef: 'onboarding@v3', DispatchKey: key };
    await page.goto(`${temporalUiUrl()}/namespaces/default/workflows?query=${encodeURIComponent(query)}`);
    const rows = page.getByTestId('workflows-summary-configurable-table-row');
    const row = rows.filter({ hasText: id });
    await row.waitFor();
    expect(await rows.count()).toBe(1);
    // Temporal's list API returns no user metadata, so no version of the UI lists summaries; the summary's three
    // parts are search attributes, which an operator adds as columns once (the UI keeps them per namespace).
    await page.getByTestId('workflows-summary-table-configuration-button').click();
    for (const column of Object.keys(summaryColumns)) {
      await page.getByRole('button', { name: `Add ${column} column` }).click();
    }
    // Room for them beside the id on one screen: the run id and end time say little about a running dispatch.
    for (const column of ['Run ID', 'End'])
      await page.getByRole('button', { name: `Remove ${column} column` }).click();
    await page.getByTestId('drawer-close-button').click();
    await page.getByTestId('drawer-close-button').waitFor({ state: 'hidden' });
    const cellsByColumn = async (): Promise<Record<string, string>> => {
      const headers = await page.locator('thead th').allInnerTexts();
      const cells = await row.locator('td').allInnerTexts();
      return Object.fromEntries(headers.map((hd, i) => [hd.trim(), (cells[i] ?? '').trim()]));
    };
    const listed = await waitFor(
      async () => {
        const byColumn = await cellsByColumn();
        return Object.keys(summaryColumns).every((c) => c in byColumn) ? byColumn : undefined;
      },
      { what: 'the summary columns in the workflow list' },
    );
    await page.setViewportSize({ width: 1920, height: 600 });
    await shot('1-workflow-list');
    await page.setViewportSize({ width: 1440, height: 900 });
    for (const [column, value] of Object.entries(summaryColumns)) expect(listed[column]).toBe(value);
    const rowText = await row.innerText();
    expect(rowText).toContain('Running');
    expect(rowText).toContain('dispatch');

    // 2. The execution's page.
    await row.getByRole('link', { name: id, exact: true }).click();
    await page.waitForURL(/\/history$/);
    await expect(page.getByTestId('workflow-id-heading').innerText()).resolves.toContain(id);
    const pendingTab = page.getByTestId('pending-activities-tab');
    await expect(pendingTab.innerText()).resolves.toMatch(/Pending Activities\s*1/);
    await shot('2-workflow-history');
    // Its user metadata (set by the ingester at start): the one-line summary and the details.
    await page.getByText('User Metadata', { exact: true }).click();
    // Summary and details are Markdown, which the UI renders in frames of their own.
    const framesWith = (needle: string) =>
      waitFor(
        async () => {
          for (const frame of page.frames()) {
            const t = await frame
              .locator('body')
              .innerText()
              .catch(() => '');
            if (t.includes(needle)) return t;
          }
          return undefined;
        },
        { what: `"${needle}" on the execution page` },
      );
    await framesWith(`${h.tenant} · onboarding@v3 · ${key}`);
    const details = await framesWith('What the relay does');
    await shot('2b-user-metadata');
    expect(details).toContain(`Source record: ${topics.dispatch(h.tenant)} partition 0 offset 0`);
    expect(details).toContain(`a dead letter goes to ${topics.dlq(h.tenant)}`);
    // The pending call is named by its summary among the events with metadata.
    const pageText = await page.locator('main').innerText();
    expect(pageText).toContain(`POST /v1/runs · ${h.tenant}`);

    // 3. Its pending activity: postRun, the attempt it is on out of the maximum, and the last failure (503).
    await pendingTab.click();
    await page.waitForURL(/\/pending-activities$/);
    await page.getByRole('heading', { name: 'postRunWithInputBytes', exact: true }).waitFor();
    await page.getByText('Last Failure').waitFor();
    await shot('3-pending-activity');
    await page.getByText('Heartbeat Details', { exact: true }).waitFor();
    const text = await page.locator('main').innerText();
    const callsAfter = h.api.requestsFor(key).length;
    expect(text).toContain(id);
    expect(text).toContain('postRunWithInputBytes');
    const attempt = /Attempt\s+(\d+) of (\d+)/.exec(text);
    expect(attempt).not.toBeNull();
    const attemptNo = Number(attempt![1]);
    expect(Number(attempt![2])).toBe(50);
    // The attempt the UI shows is the one the API saw last, or the next one already scheduled.
    expect(attemptNo).toBeGreaterThanOrEqual(Math.max(2, callsBefore));
    expect(attemptNo).toBeLessThanOrEqual(callsAfter + 1);
    expect(text).toContain('Last Failure');
    expect(text).toContain('runs API answered 503');
    expect(text).toContain('upstream busy');
    expect(text).toContain('RunsApiUnavailable');
    expect(text).toMatch(/"httpStatus":\s*503/);
    // The attempt history (contract §6 attempts) in the heartbeat details: every attempt so far, from the first
    // (and, while a retry's call is in flight, that attempt as `current`).
    const beat = text.slice(text.indexOf('\nHeartbeat Details\n'));
    expect(beat).toMatch(
      /"attempt": 1,\s*"at": "[^"]+",\s*"http_status": 503,\s*"error": "runs API answered 503/,
    );
    expect(beat).toMatch(/"attempt": 2,\s*"at": "[^"]+",\s*"http_status": 503/);
  });

  test('a dispatch dead-lettered by a 422 is run again by `temporal workflow reset` once the API is fixed: one run at the API, the new run Completed', async () => {
    h = await createHarness();
    await h.startWorker();
    await h.startIngester();
    const key = 'reset-cli';
    await publishRefused(h, key);
    const failedRunId = await expectDeadLettered(h, key);

    // The API now admits the dispatch (the 422 was scripted once).
    const out = await temporalCli([
      'workflow',
      'reset',
      '--workflow-id',
      h.wfId(key),
      '--type',
      'FirstWorkflowTask',
      '--reason',
      'api fixed',
      '--output',
      'json',
    ]);
    const { runId } = JSON.parse(out.stdout) as { runId: string };
    await expectResetRunCompleted(h, key, failedRunId, runId);
    await h.expectCommittedAtLogEnd();
  });

  test('a dispatch dead-lettered by a 422 is run again by `tctl workflow reset` once the API is fixed: one run at the API, the new run Completed', async () => {
    h = await createHarness();
    await h.startWorker();
    await h.startIngester();
    const key = 'reset-tctl';
    await publishRefused(h, key);
    const failedRunId = await expectDeadLettered(h, key);

    const out = await tctl([
      'workflow',
      'reset',
      '--workflow_id',
      h.wfId(key),
      '--reset_type',
      'FirstWorkflowTask',
      '--reason',
      'api fixed',
    ]);
    // tctl prints the reset type, then the new run as JSON: {"runId": "…"}.
    const runId = /"runId":\s*"([0-9a-f-]{36})"/.exec(out.stdout)?.[1];
    if (!runId) throw new Error(`no new run id in tctl output: ${out.stdout}`);
    await expectResetRunCompleted(h, key, failedRunId, runId);
    await h.expectCommittedAtLogEnd();
  });

  test('`temporal activity pause` stops the retries of a stuck dispatch (no API call while paused); after the API recovers, `unpause` completes it with exactly one run', async () => {
    h = await stuckHarness();
    await h.startWorker();
    await h.startIngester();
    const key = 'pause-unpause';
    const id = h.wfId(key);
    stillRunning.push(id);
    await h.publish(h.dispatchValue(key));
    await h.api.waitFor((a) => a.requestsFor(key).length >= 2, 60_000, 'two failed attempts');
    const handle = h.client.workflow.getHandle(id);

    await temporalCli(['activity', 'pause', '--workflow-id', id, '--activity-type', 'postRunWithInputBytes']);
    const paused = await waitFor(
      async () => {
        const p = (await handle.describe()).raw.pendingActivities?.[0];
        return p?.paused && p.state === PendingActivityState.PENDING_ACTIVITY_STATE_PAUSED ? p : undefined;
      },
      { what: 'the postRun activity to be paused' },
    );
    expect(paused.activityType?.name).toBe('postRunWithInputBytes');
    const callsWhenPaused = h.api.requestsFor(key).length;
    expect(callsWhenPaused).toBeGreaterThanOrEqual(2);
    expect(h.api.requestsFor(key).every((r) => r.answer === 503)).toBe(true);

    // Unpaused, the activity would retry at least every RETRY_MAX_INTERVAL_MS (2 s). A control dispatch on the
    // same worker, failing the same way, shows the worker retrying meanwhile: once its calls span twice that
    // interval since the pause, the paused one must have made none (a starved worker would stall both).
    const pausedAtMs = Date.now();
    const control = 'pause-control';
    stillRunning.push(h.wfId(control));
    await h.publish(h.dispatchValue(control));
    await h.api.waitFor(
      (a) => {
        const calls = a.requestsFor(control);
        return calls.length >= 3 && calls[calls.length - 1]!.receivedAtMs - pausedAtMs >= 4_000;
      },
      120_000,
      'the control dispatch to retry for two maximum intervals',
    );
    expect(h.api.requestsFor(key)).toHaveLength(callsWhenPaused);
    const still = (await handle.describe()).raw.pendingActivities?.[0];
    expect(still?.paused).toBe(true);
    expect((await handle.describe()).status.name).toBe('RUNNING');

    h.api.always(undefined);
    await temporalCli([
      'activity',
      'unpause',
      '--workflow-id',
      id,
      '--activity-type',
      'postRunWithInputBytes',
    ]);
    expect(await handle.result()).toEqual({ run_id: h.api.runs.get(key), admission: 'created' });
    const desc = await handle.describe();
    expect(desc.status.name).toBe('COMPLETED');
    expect(desc.raw.workflowExecutionInfo?.status).toBe(
      WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_COMPLETED,
    );
    const answers = h.api.requestsFor(key).map((r) => r.answer);
    expect(answers).toEqual([...Array<number>(callsWhenPaused).fill(503), 201]);
    expect(await h.client.workflow.getHandle(h.wfId(control)).result()).toMatchObject({
      admission: 'created',
    });
    expect(h.api.runs.size).toBe(2);
    await h.expectCommittedAtLogEnd();
  });

  test('executions started by the previous version (input parsed, not text) complete on this worker, and a refused one is dead-lettered with its input', async () => {
    const h = await createHarness();
    try {
      await h.startWorker();
      h.api.scriptFor('legacy-refused', { kind: 'status', status: 422, body: 'unknown workflow_ref' });
      const legacy = (key: string): DispatchInput => ({
        tenant: h.tenant,
        dispatch: {
          workflow_ref: 'onboarding@v3',
          input: { user: 42, big: [1, 2.5] },
          goal_id: 'g-1',
          dispatch_key: key,
        },
        source: {
          topic: `poimen.${h.tenant}.dispatch`,
          partition: 0,
          offset: '0',
          timestamp: String(Date.now()),
        },
        policy: { maxAttempts: 4, initialIntervalMs: 200, maxIntervalMs: 1000, attemptTimeoutMs: 3000 },
      });
      const done = await h.client.workflow.start(
        WORKFLOW_TYPE,
        dispatchStartOptions(h.taskQueue, legacy('legacy-ok')),
      );
      expect(await done.result()).toEqual({ run_id: h.api.runs.get('legacy-ok'), admission: 'created' });
      expect(h.api.requestsFor('legacy-ok')[0]!.json).toEqual({
        workflow_ref: 'onboarding@v3',
        input: { user: 42, big: [1, 2.5] },
        goal_id: 'g-1',
        dispatch_key: 'legacy-ok',
      });
      const refused = await h.client.workflow.start(
        WORKFLOW_TYPE,
        dispatchStartOptions(h.taskQueue, legacy('legacy-refused')),
      );
      await expect(refused.result()).rejects.toBeInstanceOf(WorkflowFailedError);
      const [dead] = await h.readDlq(1);
      expect(dead).toMatchObject({
        type: 'dispatch_failure',
        dispatch_key: 'legacy-refused',
        http_status: 422,
      });
      expect(JSON.parse(dead!.payload!)).toEqual({
        workflow_ref: 'onboarding@v3',
        input: { user: 42, big: [1, 2.5] },
        goal_id: 'g-1',
        dispatch_key: 'legacy-refused',
      });
    } finally {
      await h.cleanup();
    }
  });

  test('histories of every dispatch outcome replay against the current workflow code without a determinism error (POIMEN_RECORD_HISTORIES=1 re-records test/fixtures/histories)', async () => {
    // h-exhausted spends an attempt cap (the shipped policy has none), and failures scripted for several keys at
    // once must not open the process-wide breaker: each recorded history is one key's own scripted outcome.
    h = await createHarness({ env: { RETRY_MAX_ATTEMPTS: '4', POIMEN_BREAKER_FAILURES: '1000' } });
    const harness = h;
    const firstWorker = await harness.startWorker('worker-1');
    await harness.startIngester();
    const recorded: { name: string; workflowId: string; runId?: string }[] = [];
    const record = (name: string, key: string, runId?: string) =>
      recorded.push({ name, workflowId: harness.wfId(key), ...(runId ? { runId } : {}) });

    // Outcomes run side by side; each dispatch key has its own script at the API.
    harness.api.scriptFor('h-retried', { kind: 'status', status: 503 }, { kind: 'status', status: 503 });
    harness.api.scriptFor('h-lost-answer', { kind: 'drop', afterAdmit: true });
    harness.api.scriptFor('h-exhausted', ...Array<Fault>(4).fill({ kind: 'status', status: 503 }));
    const outcomes = {
      'h-success': [201],
      'h-retried': [503, 503, 201],
      'h-lost-answer': ['dropped', 409],
      'h-exhausted': [503, 503, 503, 503],
    } as const;
    for (const key of Object.keys(outcomes)) await harness.publish(harness.dispatchValue(key));
    await publishRefused(harness, 'h-rejected');
    for (const key of ['h-success', 'h-retried', 'h-lost-answer']) {
      const result = await (await waitForExecution(harness, key)).result();
      expect(result.run_id).toBe(harness.api.runs.get(key));
    }
    const exhausted = await waitForExecution(harness, 'h-exhausted');
    await expect(exhausted.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    const failedRunId = await expectDeadLettered(harness, 'h-rejected', 2);
    for (const [key, answers] of Object.entries(outcomes)) {
      expect({ key, answers: harness.api.requestsFor(key).map((r) => r.answer) }).toEqual({ key, answers });
    }
    record('completed-created', 'h-success');
    record('completed-after-503-retries', 'h-retried');
    record('completed-existing-after-lost-answer', 'h-lost-answer');
    record('failed-retries-exhausted', 'h-exhausted');
    record('failed-rejected-422', 'h-rejected', failedRunId);

    // A budgeted execution (as the ingester starts them now) whose API never recovers: dead-lettered when its
    // budget is spent, after the workflow's wait for the budget's end.
    harness.api.scriptFor('h-budget', ...Array<Fault>(50).fill({ kind: 'status', status: 503 }));
    const budgeted: DispatchInput = {
      tenant: harness.tenant,
      dispatch: { workflow_ref: 'wf', input_json: '{}', goal_id: null, dispatch_key: 'h-budget' },
      source: { topic: `poimen.${harness.tenant}.dispatch`, partition: 0, offset: '0', timestamp: '0' },
      policy: {
        attemptTimeoutMs: 3000,
        initialIntervalMs: 200,
        backoff: 2,
        maxIntervalMs: 1000,
        maxDurationMs: 4000,
        attemptCap: 0,
        maxAttempts: 8,
      },
    };
    const spent = await harness.client.workflow.start(
      WORKFLOW_TYPE,
      dispatchStartOptions(harness.taskQueue, budgeted),
    );
    const budgetFailure = await spent.result().catch((e: unknown) => e);
    expect((budgetFailure as WorkflowFailedError).cause?.message).toMatch(
      /^dead-lettered after \d+ attempt\(s\): retry budget of 4 s spent \(RETRY_MAX_DURATION_MS\)/,
    );
    record('failed-budget-spent', 'h-budget');

    // A reset of the dead-lettered dispatch: the new run's history starts with the old run's events.
    const reset = await temporalCli([
      'workflow',
      'reset',
      '--workflow-id',
      harness.wfId('h-rejected'),
      '--type',
      'FirstWorkflowTask',
      '--reason',
      'api fixed',
      '--output',
      'json',
    ]);
    const { runId: resetRunId } = JSON.parse(reset.stdout) as { runId: string };
    await harness.client.workflow.getHandle(harness.wfId('h-rejected'), resetRunId).result();
    record('completed-after-reset', 'h-rejected', resetRunId);

    // The worker dies while its call is at the API; another worker retries it after the attempt's timeout.
    // The API holds the call until the worker is dead, then admits it: the worker never hears the answer.
    harness.api.scriptFor('h-worker-crash', { kind: 'hold' });
    await harness.publish(harness.dispatchValue('h-worker-crash'));
    await harness.api.waitFor((a) => a.heldCount === 1, 60_000, 'the first call held at the API');
    await firstWorker.kill();
    expect(harness.api.release()).toBe(1);
    await harness.api.waitFor((a) => a.runs.has('h-worker-crash'), 60_000, 'the API to admit the run');
    await harness.startWorker('worker-2');
    const crashed = await waitForExecution(harness, 'h-worker-crash');
    expect(await crashed.result()).toEqual({
      run_id: harness.api.runs.get('h-worker-crash'),
      admission: 'existing',
    });
    expect(harness.api.requestsFor('h-worker-crash').map((r) => r.answer)).toEqual([201, 409]);
    record('completed-existing-after-worker-crash', 'h-worker-crash');

    // Replayed from their JSON form, as the fixtures are.
    const histories = await Promise.all(
      recorded.map(async (r) => {
        const json = await historyJson(harness.client, r.workflowId, r.runId);
        return { ...r, json, history: historyFromJson(json) };
      }),
    );
    for (const r of histories) expect(dispatchWorkflowId(r.json)).toBe(r.workflowId);
    const results = [];
    for await (const result of Worker.runReplayHistories(
      { workflowsPath: require.resolve('../src/workflows') },
      histories.map((r) => ({ workflowId: r.workflowId, history: r.history })),
    )) {
      results.push({ workflowId: result.workflowId, error: result.error?.message });
    }
    expect(results).toEqual(histories.map((r) => ({ workflowId: r.workflowId, error: undefined })));

    if (recordingHistories()) {
      for (const r of histories) writeHistoryFixture(r.name, r.json);
    }
  });
});
