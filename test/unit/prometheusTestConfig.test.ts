/**
 * The live alerts test (test/it_live_alerts.test.ts) runs Prometheus on copies of the shipped deploy/prometheus
 * files: the copies differ from them only in intervals, targets and `for:`, so what fires there is the shipped
 * rules. And the dashboard's queries it runs are every panel's, with the metric names each one selects.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { dashboardQueries, metricNamesIn } from '../support/dashboardQueries';
import { ruleFiles, testAlertRules, testPrometheusConfig } from '../support/prometheusTestConfig';

const root = path.resolve(__dirname, '..', '..');
const CONFIG = fs.readFileSync(path.join(root, 'deploy/prometheus/prometheus.yml'), 'utf8');
const RULES = fs.readFileSync(path.join(root, 'deploy/prometheus/alerts.yml'), 'utf8');
const TARGETS = { 'poimen-ingester': ['127.0.0.1:40001'], 'poimen-worker': ['127.0.0.1:40002'] };

type Config = {
  global: Record<string, string>;
  scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
};
type Rules = { groups: { rules: Record<string, unknown>[] }[] };

describe('the test copy of deploy/prometheus/prometheus.yml', () => {
  test('differs from the shipped one only in the global intervals and the targets', () => {
    const shipped = parse(CONFIG) as Config;
    const copy = parse(testPrometheusConfig(CONFIG, TARGETS, '1s')) as Config;
    expect(copy.global).toEqual({ ...shipped.global, scrape_interval: '1s', evaluation_interval: '1s' });
    expect(copy.scrape_configs.map((j) => j.static_configs[0]!.targets)).toEqual(
      shipped.scrape_configs.map((j) => TARGETS[j.job_name as keyof typeof TARGETS]),
    );
    const rest = (c: Config) => ({
      ...c,
      global: undefined,
      scrape_configs: c.scrape_configs.map((j) => ({ ...j, static_configs: undefined })),
    });
    expect(rest(copy)).toEqual(rest(shipped));
    // The rules' copy is written under the shipped relative name, so rule_files stays as shipped.
    expect(ruleFiles(CONFIG)).toEqual(['alerts.yml']);
  });

  test('refuses targets that do not name exactly the shipped jobs', () => {
    expect(() => testPrometheusConfig(CONFIG, { 'poimen-ingester': ['127.0.0.1:1'] }, '1s')).toThrow(
      /the shipped config has poimen-ingester, poimen-worker/,
    );
    expect(() => testPrometheusConfig(CONFIG, { ...TARGETS, other: ['127.0.0.1:1'] }, '1s')).toThrow();
  });
});

describe('the test copy of deploy/prometheus/alerts.yml', () => {
  test('differs from the shipped rules only in the `for:` of the rules that have one', () => {
    const shipped = (parse(RULES) as Rules).groups.flatMap((g) => g.rules);
    const { yaml, overrides } = testAlertRules(RULES, '5s', '1s');
    const copy = (parse(yaml) as Rules).groups.flatMap((g) => g.rules);
    expect(copy).toHaveLength(shipped.length);
    copy.forEach((rule, i) => {
      const original = shipped[i]!;
      expect({ ...rule, for: undefined }).toEqual({ ...original, for: undefined });
      expect(rule.for).toBe(original.for === undefined ? undefined : '5s');
    });
    expect(overrides.map((o) => `${o.alert} ${o.shipped}`)).toEqual(
      shipped.filter((r) => r.for !== undefined).map((r) => `${String(r.alert)} ${String(r.for)}`),
    );
  });
});

describe("the dashboard's queries", () => {
  test('are every panel target, with $tenant and $__rate_interval filled in', () => {
    const dashboard = fs.readFileSync(path.join(root, 'deploy/grafana/poimen-relay-dashboard.json'), 'utf8');
    const queries = dashboardQueries(['ta', 'tb'], '5m');
    expect(queries).toHaveLength(dashboard.match(/"expr":/g)!.length);
    expect(queries.filter((q) => q.expr.includes('$'))).toEqual([]);
    expect(queries[0]!.expr).toContain('poimen\\\\.(?:ta|tb)\\\\.dispatch');
  });

  test('name their metrics: not functions, keywords, grouping labels or matcher values', () => {
    expect(
      metricNamesIn('sum(max by (topic, partition) (poimen_inbox_lag{topic=~"poimen\\\\.x\\\\.dispatch"}))'),
    ).toEqual(['poimen_inbox_lag']);
    expect(
      metricNamesIn(
        'histogram_quantile(0.99, sum by (le) (rate(poimen_runs_api_request_duration_seconds_bucket[5m])))',
      ),
    ).toEqual(['poimen_runs_api_request_duration_seconds_bucket']);
    expect(metricNamesIn('a_total > 1 and on (instance) b_gauge offset 5m unless bool c')).toEqual([
      'a_total',
      'b_gauge',
      'c',
    ]);
    for (const { expr } of dashboardQueries(['ta'], '5m')) {
      for (const name of metricNamesIn(expr)) expect(name).toMatch(/^(poimen_|dlq_|temporal_)/);
    }
  });
});
