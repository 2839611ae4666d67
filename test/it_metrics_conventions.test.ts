/**
 * The relay's real processes follow the Prometheus conventions operators expect: each exports
 * `poimen_relay_build_info` = 1 naming what runs (version, Node.js version, commit, role), and its metrics server
 * answers on IPv6 loopback as well as IPv4.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { hasIpv6Loopback, httpGet } from './support/http';
import { REPO_ROOT } from './support/cli';
import { metricValue, type RelayProcess } from './support/relay';
import { createHarness, type Harness } from './support/relayHarness';
import { waitFor } from './support/wait';

const PACKAGE_VERSION = (
  JSON.parse(fs.readFileSync(`${REPO_ROOT}/package.json`, 'utf8')) as { version: string }
).version;
// The commit the relay reports when run from this checkout (a copy without .git has none to tell).
const HEAD = fs.existsSync(path.join(REPO_ROOT, '.git'))
  ? execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim()
  : 'unknown';

let h: Harness;
const processes: Record<'ingester' | 'worker', RelayProcess | undefined> = {
  ingester: undefined,
  worker: undefined,
};

beforeAll(async () => {
  h = await createHarness();
  processes.worker = await h.startWorker();
  processes.ingester = await h.startIngester();
});

afterAll(async () => {
  await h?.cleanup();
});

describe.each(['ingester', 'worker'] as const)('the %s process', (role) => {
  it('exports poimen_relay_build_info 1 with its version, Node.js version, commit and role', async () => {
    const text = await processes[role]!.metrics();
    expect(text).toContain('# TYPE poimen_relay_build_info gauge');
    expect(
      metricValue(text, 'poimen_relay_build_info', {
        version: PACKAGE_VERSION,
        node_version: process.version,
        commit: HEAD,
        role,
      }),
    ).toBe(1);
  });

  it('serves /metrics and /healthz on 127.0.0.1 and, when the host has IPv6 loopback, on [::1]', async () => {
    const port = processes[role]!.metricsPort;
    expect((await httpGet('127.0.0.1', port, '/healthz')).status).toBe(200);
    if (await hasIpv6Loopback()) {
      expect((await httpGet('::1', port, '/healthz')).status).toBe(200);
      expect((await httpGet('::1', port, '/metrics')).body).toContain('poimen_relay_build_info');
    } else {
      await expect(httpGet('::1', port, '/healthz')).rejects.toThrow();
    }
  });
});

describe("the worker's /metrics also carries the Temporal SDK's worker metrics", () => {
  it('schedule-to-start latency, slots in use and available, pollers and poll results, after one dispatch', async () => {
    await h.publish(h.dispatchValue('sdk-metrics-1'));
    await waitFor(() => h.api.runs.has('sdk-metrics-1'), { timeoutMs: 60_000, what: 'the run' });
    const names = [
      'temporal_workflow_task_schedule_to_start_latency_bucket',
      'temporal_activity_schedule_to_start_latency_bucket',
      'temporal_worker_task_slots_used',
      'temporal_worker_task_slots_available',
      'temporal_num_pollers',
      'temporal_workflow_task_queue_poll_succeed',
    ];
    let text = '';
    await waitFor(
      async () => {
        text = await processes.worker!.metrics();
        return names.every((n) => new RegExp(`^${n}\\{`, 'm').test(text));
      },
      { timeoutMs: 30_000, what: `the worker's /metrics to name ${names.join(', ')}` },
    );
    // Of this worker's task queue, and counting: the dispatch's workflow task was polled and started.
    expect(
      metricValue(text, 'temporal_workflow_task_queue_poll_succeed', { task_queue: h.taskQueue }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      metricValue(text, 'temporal_worker_task_slots_available', {
        task_queue: h.taskQueue,
        worker_type: 'ActivityWorker',
      }),
    ).toBeGreaterThan(0);
  });
});
