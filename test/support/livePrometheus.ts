/**
 * A real Prometheus server as a child process (Debian's `prometheus`, installed by npm test's preflight like
 * promtool), on a free 127.0.0.1 port with its own temporary TSDB, loading test copies of the repo's
 * deploy/prometheus files (test/support/prometheusTestConfig.ts says what the copies change and why).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, freePort } from './cli';
import { type ForOverride, ruleFiles, testAlertRules, testPrometheusConfig } from './prometheusTestConfig';
import { waitFor } from './wait';

const SHIPPED_CONFIG = path.join(REPO_ROOT, 'deploy/prometheus/prometheus.yml');
const SHIPPED_RULES = path.join(REPO_ROOT, 'deploy/prometheus/alerts.yml');
const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts', 'logs');
/** The preflight's own words (scripts/preflightPlan.js): the package that has promtool has the server too. */
const MISSING = 'prometheus missing: apt-get install -y prometheus';

export interface PromAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
  value: string;
}

export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface LivePrometheus {
  url: string;
  pid: number;
  logFile: string;
  /** The `for:` durations the test copy of the rules replaced. */
  forOverrides: ForOverride[];
  alerts(): Promise<PromAlert[]>;
  /** An instant query's vector (throws on a query error or a non-vector result). */
  query(expr: string): Promise<PromSample[]>;
  /** Every metric name Prometheus holds a series of. */
  metricNames(): Promise<string[]>;
  stop(): Promise<void>;
}

async function api<T>(url: string): Promise<T> {
  const res = await fetch(url);
  const body = (await res.json()) as { status: string; data: T; error?: string };
  if (body.status !== 'success') throw new Error(`${url}: ${res.status} ${body.error ?? ''}`);
  return body.data;
}

export async function startPrometheus(opts: {
  /** Job name (as in the shipped config) → its targets. */
  targets: Record<string, string[]>;
  /** Scrape and evaluation interval of the test copy. */
  interval: string;
  /** What each rule's `for:` becomes. */
  forDuration: string;
}): Promise<LivePrometheus> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-live-prometheus-'));
  const shipped = fs.readFileSync(SHIPPED_CONFIG, 'utf8');
  // The copy keeps rule_files as shipped; the rules' copy is written under the same relative name beside it.
  const [rulesName, ...others] = ruleFiles(shipped);
  if (rulesName === undefined || others.length > 0 || path.isAbsolute(rulesName)) {
    throw new Error(`expected one relative rule file in ${SHIPPED_CONFIG}`);
  }
  const rules = testAlertRules(fs.readFileSync(SHIPPED_RULES, 'utf8'), opts.forDuration, opts.interval);
  fs.writeFileSync(path.join(dir, rulesName), rules.yaml);
  const configFile = path.join(dir, 'prometheus.yml');
  fs.writeFileSync(configFile, testPrometheusConfig(shipped, opts.targets, opts.interval));

  const port = await freePort();
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const logFile = path.join(ARTIFACTS, `prometheus-${Date.now()}-${port}.log`);
  const out = fs.openSync(logFile, 'a');
  const child: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { cwd: dir, stdio: ['ignore', out, out] },
  );
  fs.closeSync(out);
  const spawned = await new Promise<Error | undefined>((resolve) => {
    child.once('spawn', () => resolve(undefined));
    child.once('error', resolve);
  });
  if (spawned) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw (spawned as NodeJS.ErrnoException).code === 'ENOENT' ? new Error(MISSING) : spawned;
  }
  const pid = child.pid!;
  let exitCode: number | null | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code) => {
      exitCode = code;
      resolve();
    }),
  );
  const url = `http://127.0.0.1:${port}`;

  const stop = async (): Promise<void> => {
    if (exitCode === undefined) {
      process.kill(pid, 'SIGTERM');
      const timer = setTimeout(() => exitCode === undefined && process.kill(pid, 'SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };

  try {
    // A config it refuses ends the process at once: stop waiting then, with its own words.
    const ready = await waitFor(
      async () =>
        exitCode !== undefined
          ? 'exited'
          : (await fetch(`${url}/-/ready`).catch(() => undefined))?.status === 200 && 'ready',
      { timeoutMs: 30_000, intervalMs: 200, what: `prometheus ready on ${url}` },
    );
    if (ready === 'exited') {
      throw new Error(`prometheus exited ${exitCode}: ${fs.readFileSync(logFile, 'utf8').slice(-2000)}`);
    }
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    url,
    pid,
    logFile,
    forOverrides: rules.overrides,
    alerts: async () => (await api<{ alerts: PromAlert[] }>(`${url}/api/v1/alerts`)).alerts,
    async query(expr) {
      const data = await api<{ resultType: string; result: PromSample[] }>(
        `${url}/api/v1/query?query=${encodeURIComponent(expr)}`,
      );
      if (data.resultType !== 'vector') throw new Error(`${expr}: a ${data.resultType}, not a vector`);
      return data.result;
    },
    metricNames: () => api<string[]>(`${url}/api/v1/label/__name__/values`),
    stop,
  };
}
