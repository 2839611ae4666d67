/**
 * The Grafana dashboard's `tenant` variable: its values are the tenants whose dispatch topics the ingesters
 * report, and every panel on a metric that names a tenant (by a `tenant` label, or a `topic` label holding
 * `poimen.<tenant>.dispatch[.dlq]`, contract §2) shows only the selected tenants. The runs API metrics carry no
 * tenant and stay global.
 */
import fs from 'node:fs';
import path from 'node:path';

interface Variable {
  name: string;
  type: string;
  datasource?: { type?: string; uid?: string };
  query?: string | { query?: string };
  regex?: string;
  includeAll?: boolean;
  multi?: boolean;
  allValue?: string;
}
interface Panel {
  title: string;
  targets?: { expr?: string }[];
}
const dashboard = JSON.parse(
  fs.readFileSync(path.resolve(__dirname, '..', '..', 'deploy/grafana/poimen-relay-dashboard.json'), 'utf8'),
) as { templating: { list: Variable[] }; panels: Panel[] };

const tenantVar = dashboard.templating.list.find((v) => v.name === 'tenant');
const exprs = dashboard.panels.flatMap((p) =>
  (p.targets ?? []).flatMap((t) => (t.expr ? [{ panel: p.title, expr: t.expr }] : [])),
);

/** A PromQL double-quoted string's value (the escapes this dashboard uses: \\ and \"). */
const unquote = (s: string): string => s.replace(/\\(.)/g, '$1');

/**
 * The regex of `label=~"..."` in expr after Grafana interpolated $tenant with `value` (one tenant's name, or the
 * variable's allValue for "All"), anchored as Prometheus anchors label regexes.
 */
function matcher(expr: string, label: string, value: string): RegExp | undefined {
  const m = new RegExp(`\\b${label}=~"((?:[^"\\\\]|\\\\.)*)"`).exec(expr);
  return m ? new RegExp(`^(?:${unquote(m[1]!).replaceAll('$tenant', value)})$`) : undefined;
}

describe('the tenant template variable', () => {
  it('lists the tenants of the dispatch topics the ingesters report, one or several or all', () => {
    expect(tenantVar).toMatchObject({
      type: 'query',
      datasource: { type: 'prometheus', uid: '${DS_PROMETHEUS}' },
      includeAll: true,
      multi: true,
    });
    const query = typeof tenantVar!.query === 'string' ? tenantVar!.query : tenantVar!.query?.query;
    expect(query).toBe('label_values(poimen_inbox_lag, topic)');
    // Grafana's variable regex: /pattern/, the first capture group is the value.
    const regex = /^\/(.*)\/$/.exec(tenantVar!.regex ?? '')?.[1];
    expect(regex).toBeDefined();
    const capture = (topic: string) => new RegExp(regex!).exec(topic)?.[1];
    expect(capture('poimen.acme.dispatch')).toBe('acme');
    expect(capture('poimen.a-b_c9.dispatch')).toBe('a-b_c9');
    expect(capture('poimen.acme.dispatch.dlq')).toBeUndefined();
  });

  const tenantMetrics = /\b(poimen_inbox_lag|poimen_dispatch_records_total|dlq_[a-z_]+)\b/;
  const perTenant = exprs.filter((e) => tenantMetrics.test(e.expr));

  it('is used by every panel on a metric that names a tenant', () => {
    expect(perTenant.map((e) => e.panel)).toEqual(
      expect.arrayContaining([
        'Inbox lag by topic',
        'Dispatch records by outcome',
        'Dead letters sent by topic',
        'Dead letters not yet replayed',
        'Oldest dead letter not yet replayed',
      ]),
    );
    for (const { panel, expr } of perTenant)
      expect({ panel, expr }).toEqual({ panel, expr: expect.stringContaining('$tenant') });
  });

  it.each(perTenant.map((e): [string, string] => [e.panel, e.expr]))(
    '"%s" selects exactly the chosen tenant, and every tenant for All',
    (_panel, expr) => {
      const metric = tenantMetrics.exec(expr)![1]!;
      const label = metric === 'poimen_dispatch_records_total' ? 'tenant' : 'topic';
      const series = (tenant: string): string =>
        label === 'tenant' ? tenant : `poimen.${tenant}.dispatch${metric.startsWith('dlq_') ? '.dlq' : ''}`;
      const one = matcher(expr, label, 'acme');
      expect(one).toBeDefined();
      expect(one!.test(series('acme'))).toBe(true);
      for (const other of ['acme2', 'globex', 'xacme']) expect(one!.test(series(other))).toBe(false);
      // Several selected: Grafana writes (a|b).
      const two = matcher(expr, label, '(acme|globex)')!;
      expect([series('acme'), series('globex'), series('initech')].map((s) => two.test(s))).toEqual([
        true,
        true,
        false,
      ]);
      const all = matcher(expr, label, tenantVar!.allValue ?? '')!;
      for (const t of ['acme', 'globex', 'a-b_c9']) expect(all.test(series(t))).toBe(true);
    },
  );

  it('leaves the runs API panels global (their metrics carry no tenant)', () => {
    const runsApi = exprs.filter((e) => /poimen_runs_api_/.test(e.expr));
    expect(runsApi.length).toBeGreaterThan(0);
    for (const e of runsApi) expect(e.expr).not.toContain('$tenant');
  });
});
