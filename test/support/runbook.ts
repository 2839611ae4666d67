/**
 * Where the alerts' runbook_url annotations point: docs/runbook.md in the project's repository, whose address is
 * package.json `homepage` (its one home), so Alertmanager and Grafana can follow the link from anywhere. Every
 * runbook_url of deploy/prometheus/alerts.yml (and of the PrometheusRule generated from it) is this plus
 * `#<section>`; an operator points them at a copy with deploy/k8s/components/runbook-base
 * (docs/operations.md#alert-runbook-links).
 */
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { homepage: string };

/** docs/runbook.md as the project's repository serves it. */
export const RUNBOOK_URL = `${pkg.homepage}/blob/main/docs/runbook.md`;

/** The section a runbook_url names when it is RUNBOOK_URL#<section>; undefined for any other value. */
export function runbookSection(url: string | undefined, base = RUNBOOK_URL): string | undefined {
  if (url === undefined || !url.startsWith(`${base}#`)) return undefined;
  const section = url.slice(base.length + 1);
  return /^[a-z0-9_-]+$/.test(section) ? section : undefined;
}
