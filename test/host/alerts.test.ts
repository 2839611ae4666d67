/**
 * The Prometheus alert rules are code: `promtool test rules` runs deploy/prometheus/alerts.test.yml, which shows
 * every alert of deploy/prometheus/alerts.yml firing (exact labels and annotations) and not firing. promtool is
 * a host tool (Debian/Ubuntu package `prometheus`); when it is missing these tests fail, they never skip.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { RUNBOOK_URL, runbookSection } from '../support/runbook';

const root = path.resolve(__dirname, '..', '..');
const RULES = 'deploy/prometheus/alerts.yml';
const RULE_TESTS = 'deploy/prometheus/alerts.test.yml';
const DASHBOARD = 'deploy/grafana/poimen-relay-dashboard.json';
const MISSING = 'promtool missing: apt-get install -y prometheus';

interface Run {
  status: number | null;
  output: string;
}

function promtool(args: string[], cwd = root): Run {
  const r = spawnSync('promtool', args, { cwd, encoding: 'utf8', timeout: 120_000 });
  if (r.error) {
    if ((r.error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(MISSING);
    throw r.error;
  }
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** Asserts success, showing promtool's own report when it is not. */
function expectSuccess(run: Run, args: string[]): void {
  if (run.status !== 0) throw new Error(`promtool ${args.join(' ')} exited ${run.status}:\n${run.output}`);
  expect(run.output).toContain('SUCCESS');
}

interface RuleTest {
  alert_rule_test?: { alertname: string; exp_alerts?: { exp_annotations?: Record<string, string> }[] }[];
}

const alertNames = (): string[] =>
  (
    parse(fs.readFileSync(path.join(root, RULES), 'utf8')) as { groups: { rules: { alert?: string }[] }[] }
  ).groups
    .flatMap((g) => g.rules)
    .flatMap((r) => (r.alert ? [r.alert] : []));

function withTempDir<T>(fn: (dir: string) => T): T {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-alerts-'));
  try {
    return fn(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('deploy/prometheus/alerts.yml (promtool)', () => {
  it('is a valid rule file', () => {
    const args = ['check', 'rules', RULES];
    expectSuccess(promtool(args), args);
  });

  it('passes its unit tests (alerts.test.yml)', () => {
    const args = ['test', 'rules', RULE_TESTS];
    expectSuccess(promtool(args), args);
  });

  it('has, for every alert, a test where it fires (with its runbook) and one where it does not', () => {
    const tests = (parse(fs.readFileSync(path.join(root, RULE_TESTS), 'utf8')) as { tests: RuleTest[] })
      .tests;
    const cases = tests.flatMap((t) => t.alert_rule_test ?? []);
    const names = alertNames();
    expect(names).toHaveLength(10);
    for (const name of names) {
      const mine = cases.filter((c) => c.alertname === name);
      const firing = mine.filter((c) => (c.exp_alerts ?? []).length > 0);
      expect({ name, firing: firing.length > 0 }).toEqual({ name, firing: true });
      expect({ name, silent: mine.some((c) => (c.exp_alerts ?? []).length === 0) }).toEqual({
        name,
        silent: true,
      });
      for (const c of firing) {
        for (const a of c.exp_alerts ?? [])
          expect(runbookSection(a.exp_annotations?.runbook_url)).toBeDefined();
      }
    }
  });

  it('links every alert to a section of docs/runbook.md that exists (GitHub heading anchors)', () => {
    const rules = (
      parse(fs.readFileSync(path.join(root, RULES), 'utf8')) as {
        groups: { rules: { alert?: string; annotations?: Record<string, string> }[] }[];
      }
    ).groups.flatMap((g) => g.rules);
    const runbook = fs.readFileSync(path.join(root, 'docs/runbook.md'), 'utf8');
    const anchors = [...runbook.matchAll(/^#{1,6} (.+)$/gm)].map((m) =>
      m[1]!
        .trim()
        .toLowerCase()
        .replace(/[^a-z0-9 _-]/g, '')
        .replace(/ /g, '-'),
    );
    for (const r of rules.filter((x) => x.alert)) {
      const url = r.annotations?.runbook_url ?? '';
      const [file] = url.split('#');
      const anchor = runbookSection(url);
      expect({ alert: r.alert, file }).toEqual({ alert: r.alert, file: RUNBOOK_URL });
      expect({ alert: r.alert, anchor: anchors.includes(anchor ?? '') }).toEqual({
        alert: r.alert,
        anchor: true,
      });
    }
  });

  // Each rewrite is a plausible mistake the tests must catch: a threshold off by ten, and a breaker alert that
  // counts only "open" (1), which a half-open probe (2) would reset every probe interval.
  it.each([
    [
      'PoimenDlqLagHigh',
      'max by (topic) (dlq_consumer_lag) > 100',
      'max by (topic) (dlq_consumer_lag) > 1000',
    ],
    [
      'PoimenRunsApiCircuitOpen',
      'count(poimen_runs_api_circuit_state > 0)',
      'count(poimen_runs_api_circuit_state == 1)',
    ],
  ])('fails when the expression of %s is broken (the tests really check the rules)', (name, expr, wrong) => {
    const rules = fs.readFileSync(path.join(root, RULES), 'utf8');
    const broken = rules.replace(expr, wrong);
    expect(broken).not.toBe(rules);
    withTempDir((dir) => {
      fs.writeFileSync(path.join(dir, 'alerts.yml'), broken);
      fs.copyFileSync(path.join(root, RULE_TESTS), path.join(dir, 'alerts.test.yml'));
      const run = promtool(['test', 'rules', 'alerts.test.yml'], dir);
      expect(run.status).not.toBe(0);
      expect(run.output).toContain('FAILED');
      expect(run.output).toContain(name);
    });
  });
});

describe('deploy/grafana dashboard queries (promtool)', () => {
  it('are valid PromQL', () => {
    const dashboard = JSON.parse(fs.readFileSync(path.join(root, DASHBOARD), 'utf8')) as {
      panels: { targets?: { expr?: string }[] }[];
    };
    const exprs = dashboard.panels.flatMap((p) => p.targets ?? []).flatMap((t) => (t.expr ? [t.expr] : []));
    expect(exprs.length).toBeGreaterThan(0);
    // Each query becomes a recording rule, so promtool parses it; Grafana's $__rate_interval and $__range become
    // durations.
    const rules = {
      groups: [
        {
          name: 'dashboard',
          rules: exprs.map((expr, i) => ({
            record: `dashboard:query_${i}`,
            expr: expr.replaceAll('$__rate_interval', '5m').replaceAll('$__range', '1h'),
          })),
        },
      ],
    };
    withTempDir((dir) => {
      const file = path.join(dir, 'dashboard-rules.json');
      fs.writeFileSync(file, JSON.stringify(rules));
      const args = ['check', 'rules', file];
      expectSuccess(promtool(args), args);
    });
  });
});
