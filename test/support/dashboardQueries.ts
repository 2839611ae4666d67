/**
 * The Grafana dashboard's queries (deploy/grafana/poimen-relay-dashboard.json) ready to run against a Prometheus,
 * and the metric names each selects, for test/it_live_alerts.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './cli';

interface Panel {
  title?: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}

/**
 * Every panel's queries, rows' nested panels included, with Grafana's variables filled in as it would: `$tenant` as
 * these tenants, `$__rate_interval` as `rateWindow` (Grafana makes it at least four scrape intervals), and the
 * dashboard's time range `$__range` as `rateWindow` too (a window the test's scenario fits in).
 */
export function dashboardQueries(tenants: string[], rateWindow: string): { panel: string; expr: string }[] {
  const file = path.join(REPO_ROOT, 'deploy/grafana/poimen-relay-dashboard.json');
  const dashboard = JSON.parse(fs.readFileSync(file, 'utf8')) as { panels: Panel[] };
  const flat = (ps: Panel[]): Panel[] => ps.flatMap((p) => [p, ...flat(p.panels ?? [])]);
  return flat(dashboard.panels).flatMap((p) =>
    (p.targets ?? []).flatMap((t) =>
      t.expr
        ? [
            {
              panel: p.title ?? '?',
              // A multi-value variable becomes an alternation, as Grafana formats it for a regex matcher.
              expr: t.expr
                .replace(/\$\{?tenant\}?/g, `(?:${tenants.join('|')})`)
                .replace(/\$\{?__rate_interval\}?/g, rateWindow)
                .replace(/\$\{?__range\}?/g, rateWindow),
            },
          ]
        : [],
    ),
  );
}

const PROMQL_WORDS = new Set(['and', 'or', 'unless', 'bool', 'offset']);

/** The metric names an expression selects: identifiers that are not functions, keywords, labels or strings. */
export function metricNamesIn(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
    .replace(/\[[^\]]*\]/g, '');
  const words = bare.match(/\b[a-zA-Z_:][a-zA-Z0-9_:]*\b(?!\s*\()/g) ?? [];
  return [...new Set(words.filter((w) => !PROMQL_WORDS.has(w)))];
}
