/**
 * The live alerts test's copies of deploy/prometheus/prometheus.yml and alerts.yml, derived from the shipped files
 * by parsing them and changing only what a test on one machine cannot keep:
 *   - prometheus.yml: the global scrape and evaluation intervals (15 s in production) and each job's targets
 *     (compose service names there, the relay processes' metrics ports on 127.0.0.1 here);
 *   - alerts.yml: each rule's `for:` (5 to 15 minutes in production) and a group's own `interval`, if it has one.
 * Everything else (expressions with their thresholds and range windows, labels, annotations, rule_files, job names,
 * metrics paths) is the shipped text, so a change to the shipped rules is what the live test runs.
 * Pure: test/unit/prometheusTestConfig.test.ts checks that nothing else changes.
 */
import { parse, stringify } from 'yaml';

interface StaticConfig {
  targets: string[];
  [k: string]: unknown;
}
interface ScrapeConfig {
  job_name: string;
  static_configs?: StaticConfig[];
  [k: string]: unknown;
}
interface PrometheusConfig {
  global?: Record<string, unknown>;
  scrape_configs?: ScrapeConfig[];
  [k: string]: unknown;
}
interface Rule {
  alert?: string;
  record?: string;
  for?: string;
  [k: string]: unknown;
}
interface RuleFile {
  groups: { name: string; interval?: string; rules: Rule[]; [k: string]: unknown }[];
}

/**
 * `targets`: job name → host:port list. Every shipped job must be given targets and no other job may be named, so
 * a job added to the shipped config fails the live test until the test scrapes it too.
 */
export function testPrometheusConfig(
  shipped: string,
  targets: Record<string, string[]>,
  interval: string,
): string {
  const config = parse(shipped) as PrometheusConfig;
  const jobs = (config.scrape_configs ?? []).map((s) => s.job_name);
  const named = Object.keys(targets);
  if (jobs.length === 0 || jobs.sort().join() !== [...named].sort().join()) {
    throw new Error(`targets name jobs ${named.join(', ')}; the shipped config has ${jobs.join(', ')}`);
  }
  config.global = { ...config.global, scrape_interval: interval, evaluation_interval: interval };
  for (const job of config.scrape_configs ?? []) {
    const statics = job.static_configs ?? [];
    if (statics.length !== 1) throw new Error(`job ${job.job_name}: expected one static_config`);
    job.static_configs = [{ ...statics[0], targets: targets[job.job_name]! }];
  }
  return stringify(config);
}

export interface ForOverride {
  alert: string;
  shipped: string;
  test: string;
}

/** Every rule that has a `for:` gets `forDuration` instead; rules without one (fire at once) keep none. */
export function testAlertRules(
  shipped: string,
  forDuration: string,
  interval: string,
): { yaml: string; overrides: ForOverride[] } {
  const rules = parse(shipped) as RuleFile;
  const overrides: ForOverride[] = [];
  for (const group of rules.groups) {
    if (group.interval !== undefined) group.interval = interval;
    for (const rule of group.rules) {
      if (rule.for === undefined) continue;
      overrides.push({ alert: rule.alert ?? rule.record ?? '?', shipped: rule.for, test: forDuration });
      rule.for = forDuration;
    }
  }
  return { yaml: stringify(rules), overrides };
}

/** The rule files the shipped config loads, as written (relative to the config file). */
export function ruleFiles(shipped: string): string[] {
  return ((parse(shipped) as { rule_files?: string[] }).rule_files ?? []).slice();
}
