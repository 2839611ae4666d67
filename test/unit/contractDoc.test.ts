/**
 * docs/contract.md is the contract users read; this keeps it and the code from drifting apart. The code side is
 * asked, not grepped: the environment names are those the config module actually reads when it loads (an env
 * Proxy records every key), the metric names those createMetrics() registers. The document side is found by the
 * form the document's introduction fixes: in code formatting, an upper-case word with underscores is a variable,
 * a word starting `poimen_` or `dlq_` is a metric.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { TEMPORAL_SDK_ENV } from '../../src/config/temporalEnv';
import { type Env, type Role, loadRelayConfig } from '../../src/config';
import { createMetrics } from '../../src/metrics';

const DOC_PATH = path.resolve(__dirname, '..', '..', 'docs', 'contract.md');
const DOC = fs.readFileSync(DOC_PATH, 'utf8');

const FENCE = /^```[^\n]*\n([\s\S]*?)^```/gm;

/** What the document puts in code formatting: fenced blocks and inline code spans. */
function codeTexts(markdown: string): string[] {
  const fences = [...markdown.matchAll(FENCE)].map((m) => m[1]!);
  const spans = [...markdown.replace(FENCE, '').matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
  return [...fences, ...spans];
}

function wordsIn(markdown: string, word: RegExp): Set<string> {
  return new Set(codeTexts(markdown).flatMap((text) => text.match(word) ?? []));
}

const ENV_WORD = /\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g;
const METRIC_WORD = /\b(?:poimen|dlq)_[a-z0-9_]*[a-z0-9]/g;

/** The text of one numbered section, `## N. …` up to the next `## `. */
function section(markdown: string, n: number): string {
  const start = markdown.search(new RegExp(`^## ${n}\\. `, 'm'));
  if (start < 0) throw new Error(`docs/contract.md has no section ${n}`);
  const next = markdown.slice(start + 1).search(/^## /m);
  return next < 0 ? markdown.slice(start) : markdown.slice(start, start + 1 + next);
}

/** Rows of every table whose header's first cells are `headers`, as trimmed cells. */
function tableRows(markdown: string, headers: string[]): string[][] {
  const rows: string[][] = [];
  let inTable = false;
  for (const line of markdown.split('\n')) {
    if (!line.startsWith('|')) {
      inTable = false;
      continue;
    }
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
    if (headers.every((h, i) => cells[i] === h)) inTable = true;
    else if (inTable && !/^-+$/.test(cells[0] ?? '')) rows.push(cells);
  }
  return rows;
}

/** The only code span of a table cell, or undefined when the cell is anything else. */
const onlyCode = (cell: string | undefined): string | undefined => /^`([^`]+)`$/.exec(cell ?? '')?.[1];

// --------------------------------------------------------------------------------------------------------------
// The environment the code reads
// --------------------------------------------------------------------------------------------------------------

interface Loader {
  name: string;
  load(env: Env): unknown;
}

const LOADERS: Loader[] = [
  ...(['ingester', 'worker', 'cli'] as Role[]).map((role) => ({
    name: `loadRelayConfig('${role}')`,
    load: (env: Env) => loadRelayConfig(role, env),
  })),
];

/**
 * Environments under which the loaders reach every variable they read. Variables read only when another is set
 * need a scenario here: a variable the document names that no scenario reaches fails the test below, which is
 * the cue to add one.
 */
const SCENARIOS: Env[] = [
  {},
  { KAFKA_SASL_MECHANISM: 'scram-sha-256', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' },
];

/** Every key `load` reads from its environment. */
function keysRead(load: Loader['load'], env: Env): Set<string> {
  const read = new Set<string>();
  const note = (key: string | symbol) => {
    if (typeof key === 'string') read.add(key);
  };
  const recorder = new Proxy(env, {
    get: (target, key) => (note(key), Reflect.get(target, key)),
    has: (target, key) => (note(key), Reflect.has(target, key)),
    getOwnPropertyDescriptor: (target, key) => (note(key), Reflect.getOwnPropertyDescriptor(target, key)),
    ownKeys: (target) => {
      // The config module lists the environment only to hand a copy to Temporal's loader (temporalEnv.ts), which
      // reads the names TEMPORAL_SDK_ENV lists and the TEMPORAL_GRPC_META_ family from it.
      listed = true;
      return Reflect.ownKeys(target);
    },
  });
  let listed = false;
  load(recorder);
  if (listed) for (const name of TEMPORAL_SDK_ENV) read.add(name);
  return read;
}

/** Variable name -> the loaders that read it. */
const readBy = new Map<string, Set<string>>();
for (const loader of LOADERS) {
  for (const scenario of SCENARIOS) {
    for (const key of keysRead(loader.load, scenario)) {
      readBy.set(key, (readBy.get(key) ?? new Set()).add(loader.name));
    }
  }
}
const envRead = [...readBy.keys()].sort();
const envNamed = [...wordsIn(DOC, ENV_WORD)].sort();

describe('docs/contract.md and the environment the config module reads', () => {
  it('names every variable the config module reads', () => {
    expect(envRead.filter((name) => !envNamed.includes(name))).toEqual([]);
  });

  it('names no variable the config module does not read', () => {
    expect(envNamed.filter((name) => !readBy.has(name))).toEqual([]);
  });

  it("gives, for every variable with a literal default, the code's default", () => {
    const rows = tableRows(DOC, ['variable', 'default']).filter((r) => onlyCode(r[0]) && onlyCode(r[1]));
    const baseline = new Map(LOADERS.map((l) => [l, l.load({})]));
    const wrong: string[] = [];
    for (const [nameCell, defaultCell] of rows) {
      const name = onlyCode(nameCell)!;
      const value = onlyCode(defaultCell)!;
      for (const loader of LOADERS.filter((l) => readBy.get(name)?.has(l.name))) {
        // Setting a variable to its default must change nothing.
        if (!isDeepStrictEqual(loader.load({ [name]: value }), baseline.get(loader))) {
          wrong.push(`${name}=${value} (${loader.name})`);
        }
      }
    }
    expect(wrong).toEqual([]);
    // Each variable of the §5 retry budget has its default checked here.
    const budget = tableRows(section(DOC, 5), ['setting', 'variable', 'default']).map((r) => onlyCode(r[1]));
    expect(budget.length).toBeGreaterThan(0);
    expect(budget.filter((name) => !rows.some((r) => onlyCode(r[0]) === name))).toEqual([]);
  });

  it('states the §5 retry budget as the §8 defaults, in the unit it says (s, min, h)', () => {
    const defaults = new Map(
      tableRows(DOC, ['variable', 'default']).map((r) => [onlyCode(r[0]), onlyCode(r[1])] as const),
    );
    const budget = tableRows(section(DOC, 5), ['setting', 'variable', 'default']);
    expect(budget.length).toBeGreaterThan(0);
    for (const [setting, variableCell, stated] of budget) {
      const name = onlyCode(variableCell)!;
      const timed = /^(\d+(?:\.\d+)?) (s|min|h)$/.exec(stated ?? '');
      const unitMs = { s: 1_000, min: 60_000, h: 3_600_000 };
      const value = timed ? Number(timed[1]) * unitMs[timed[2] as keyof typeof unitMs] : Number(stated);
      expect({ setting, name, value }).toEqual({ setting, name, value: Number(defaults.get(name)) });
    }
  });
});

// --------------------------------------------------------------------------------------------------------------
// The metrics the code registers
// --------------------------------------------------------------------------------------------------------------

const registered = createMetrics({ defaultMetrics: false, role: 'worker' }).registry.getMetricsAsArray();
const metricsRegistered = registered.map((m) => m.name).sort();
const metricsNamed = [...wordsIn(DOC, METRIC_WORD)].sort();

describe('docs/contract.md and the metrics createMetrics() registers', () => {
  it('names every registered metric', () => {
    expect(metricsRegistered.filter((name) => !metricsNamed.includes(name))).toEqual([]);
  });

  it('names no metric that is not registered', () => {
    expect(metricsNamed.filter((name) => !metricsRegistered.includes(name))).toEqual([]);
  });

  it('gives each metric its registered type and labels in the §7 table', () => {
    const rows = tableRows(section(DOC, 7), ['metric', 'type', 'labels']);
    const stated = rows.map(([metric, type, labels]) => ({
      name: onlyCode(metric),
      type,
      labels: [...(labels ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1]),
    }));
    const actual = registered.map((m) => ({
      name: m.name,
      type: m.type,
      labels: (m as unknown as { labelNames: string[] }).labelNames,
    }));
    const byName = (a: { name?: string }, b: { name?: string }) => (a.name ?? '').localeCompare(b.name ?? '');
    expect(stated.sort(byName)).toEqual(actual.sort(byName));
  });
});
