/**
 * A variable is spelled in its row of the env table (src/config/vars/) and nowhere else: its name, schema and
 * default. Held three ways: by behaviour (each row's default is what the loaders take when the variable is unset,
 * and setting a variable to its row's default changes nothing, so a default written in a loader instead shows),
 * by the loaders' source text (no variable name in a string, no row's default as a literal), and by every other
 * file under src/ (a message names a variable by its row's `.name`, but for an allowlist that says why).
 */
import fs from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import ts from 'typescript';
import { ENV_VARS } from '../../src/config/envTable';
import { type DefaultedVar, type ParsedVar, type Role, defaultOf } from '../../src/config/envVar';
import { type Env, loadRelayConfig } from '../../src/config';
import { type Reading, watchReads } from '../../src/config/schema';
import * as DEFAULTS from '../../src/config/defaults';

const ROLES: Role[] = ['ingester', 'worker', 'cli'];
const parsedRows = ENV_VARS.filter((v): v is ParsedVar<unknown> => 'schema' in v);
const defaultedRows = parsedRows.filter((v): v is DefaultedVar<unknown> => 'default' in v);

/** What the loader records for each variable it reads from `env`, as `role`. */
function readingsOf(role: Role, env: Env): Map<string, Reading> {
  const readings = new Map<string, Reading>();
  const stop = watchReads(env, (r) => readings.set(r.name, r));
  try {
    loadRelayConfig(role, env);
  } finally {
    stop();
  }
  return readings;
}

/** A default as the value of its variable; undefined for one no value spells (an empty map). */
function asValue(value: unknown): string | undefined {
  if (value instanceof RegExp) return value.source;
  if (typeof value === 'object') return undefined;
  return String(value as string | number | boolean);
}

describe("each row's default is the one the loaders take", () => {
  it('with nothing set, every parsed variable is read and takes its row’s default (none when it has none)', () => {
    // SASL set: its user and password are read only with a mechanism.
    const sasl = { KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' };
    for (const role of ROLES) {
      const unset = readingsOf(role, {});
      const withSasl = readingsOf(role, sasl);
      for (const v of parsedRows) {
        const expected = 'default' in v ? defaultOf(v as DefaultedVar<unknown>, role) : undefined;
        const reading = unset.get(v.name) ?? (v.name in sasl ? { value: undefined } : undefined);
        expect({ role, name: v.name, read: withSasl.has(v.name), value: reading?.value }).toEqual({
          role,
          name: v.name,
          read: true,
          value: expected,
        });
      }
    }
  });

  it('setting a variable to its row’s default changes nothing (a default spelled in a loader would)', () => {
    const changed: string[] = [];
    let checked = 0;
    for (const role of ROLES) {
      const baseline = loadRelayConfig(role, {});
      for (const v of defaultedRows) {
        const value = asValue(defaultOf(v, role));
        if (value === undefined) continue;
        checked += 1;
        if (!isDeepStrictEqual(loadRelayConfig(role, { [v.name]: value }), baseline))
          changed.push(`${role}: ${v.name}=${value}`);
      }
    }
    expect(changed).toEqual([]);
    expect(checked).toBeGreaterThan(30 * ROLES.length);
  });

  it('a row an SDK reads itself has no default: the SDK’s applies (a schema only checks the value at start)', () => {
    const sdkRows = ENV_VARS.filter((v) => v.sdk);
    expect(sdkRows.length).toBeGreaterThan(0);
    expect(sdkRows.filter((v) => 'default' in v).map((v) => v.name)).toEqual([]);
  });

  it('the defaults objects are the rows’ defaults', () => {
    const byName = new Map(defaultedRows.map((v) => [v.name, v]));
    const of = (name: string, role: Role = 'cli') => defaultOf(byName.get(name)!, role);
    expect(DEFAULTS.RETRY_DEFAULTS).toEqual({
      initialIntervalMs: of('RETRY_INITIAL_INTERVAL_MS'),
      backoff: of('RETRY_BACKOFF'),
      maxIntervalMs: of('RETRY_MAX_INTERVAL_MS'),
      maxAttempts: of('RETRY_MAX_ATTEMPTS'),
      maxDurationMs: of('RETRY_MAX_DURATION_MS'),
    });
    expect(DEFAULTS.BREAKER_DEFAULTS).toEqual({
      failures: of('POIMEN_BREAKER_FAILURES'),
      probeIntervalMs: of('POIMEN_BREAKER_PROBE_INTERVAL_MS'),
    });
    expect(DEFAULTS.RUNS_API_TIMEOUT_MS_DEFAULT).toBe(of('RUNS_API_TIMEOUT_MS'));
    for (const role of ROLES) expect(DEFAULTS.DEFAULT_METRICS_PORT[role]).toBe(of('METRICS_PORT', role));
  });
});

// --------------------------------------------------------------------------------------------------------------
// The loaders' source text
// --------------------------------------------------------------------------------------------------------------

const SRC = path.resolve(__dirname, '..', '..', 'src');
/** The files that read variables through the rows, or keep what the rows hold: none may spell a variable. */
const LOADERS = ['env.ts', 'otelEnv.ts', 'defaults.ts', 'effective.ts', 'envTable.ts'].map(
  (f) => `config/${f}`,
);
const NAME_WORD =
  /\b(?:POIMEN|KAFKA|TEMPORAL|RETRY|RUNS_API|OTEL|DISPATCH|METRICS|LOG|NODE)_[A-Z0-9][A-Z0-9_]*/;

/** A numeric literal's value (`10_000` is 10000). */
const numberOf = (text: string) => Number(text.replace(/_/g, ''));

interface Literal {
  file: string;
  line: number;
  text: string;
  numeric: boolean;
}

/** Every string, template and numeric literal of a file under src/, and every object key written as a plain name. */
function literalsOf(file: string): Literal[] {
  const source = ts.createSourceFile(
    file,
    fs.readFileSync(path.join(SRC, file), 'utf8'),
    ts.ScriptTarget.Latest,
  );
  const out: Literal[] = [];
  const add = (node: ts.Node, text: string, numeric = false) =>
    out.push({
      file,
      line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1,
      text,
      numeric,
    });
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) add(node, node.text);
    else if (ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node))
      add(node, node.text);
    else if (ts.isNumericLiteral(node)) add(node, node.text, true);
    else if (ts.isPropertyAssignment(node) && ts.isIdentifier(node.name)) add(node.name, node.name.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

describe('the loaders spell no variable', () => {
  const literals = LOADERS.flatMap(literalsOf);

  it('no variable name in a string or as a key: a name is its row’s (`row.name`)', () => {
    const named = literals.filter((l) => !l.numeric && NAME_WORD.test(l.text));
    expect(named.map((l) => `${l.file}:${l.line} ${l.text}`)).toEqual([]);
  });

  it('no row’s default as a literal in a loader: a default is its row’s', () => {
    // Small numbers (0, 1, 2, 4…) are arithmetic and comparisons as often as defaults: the behaviour tests above
    // catch a small default written in a loader.
    const defaults = new Set(
      defaultedRows
        .flatMap((v) => ROLES.map((role) => asValue(defaultOf(v, role))))
        .filter((d) => d !== undefined),
    );
    // effective.ts is left out: its `default` is a source of a value, not TEMPORAL_NAMESPACE's default.
    const spelled = literals
      .filter((l) => l.file !== 'config/effective.ts')
      .filter((l) =>
        l.numeric
          ? numberOf(l.text) >= 10 && defaults.has(String(numberOf(l.text)))
          : l.text.length > 2 && defaults.has(l.text),
      );
    expect(spelled.map((l) => `${l.file}:${l.line} ${l.text}`)).toEqual([]);
  });

  it('defaults.ts holds no number at all: its values are the rows’', () => {
    expect(literalsOf('config/defaults.ts').filter((l) => l.numeric)).toEqual([]);
  });
});

// --------------------------------------------------------------------------------------------------------------
// Every other file under src/
// --------------------------------------------------------------------------------------------------------------

/**
 * The files that may spell a variable's name in a message, and why: each name listed is one they cannot take
 * from its row.
 */
const SPELLED_BY: Readonly<Record<string, { names: string[]; why: string }>> = {
  'workflows/ending.ts': {
    names: ['RETRY_MAX_DURATION_MS', 'RETRY_MAX_ATTEMPTS'],
    why: 'workflow sandbox: the lint boundary allows it values only from ./ and contract/{names,dispatch,workflow}',
  },
  'contract/dispatch.ts': {
    names: ['DISPATCH_MAX_BYTES'],
    why: 'imported by workflow code, so held to the same boundary (the rows pull in zod and node:fs)',
  },
};

/** Every .ts file under src/, relative to it. */
function sourcesUnder(dir: string): string[] {
  return fs.readdirSync(path.join(SRC, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory()) return sourcesUnder(rel);
    return e.name.endsWith('.ts') ? [rel] : [];
  });
}

describe('outside src/config/vars, a variable is named only by its row (`row.name`)', () => {
  const rowNames = new Set(ENV_VARS.map((v) => v.name));
  // A word in capitals: a name, or a prefix (TEMPORAL_GRPC_META_, TEMPORAL_TLS_*) that no row is.
  const WORD = /\b[A-Z][A-Z0-9_]*\b/g;
  const spelled = sourcesUnder('')
    .filter((f) => !f.startsWith('config/vars/'))
    .flatMap(literalsOf)
    .filter((l) => !l.numeric)
    .flatMap((l) => [...l.text.matchAll(WORD)].map((m) => ({ ...l, name: m[0] })))
    .filter((l) => rowNames.has(l.name));

  it('no file spells a row’s name in a string, a template or as a key, but those allowed (with a reason)', () => {
    const unallowed = spelled.filter((l) => !SPELLED_BY[l.file]?.names.includes(l.name));
    expect(unallowed.map((l) => `${l.file}:${l.line} ${l.name}`)).toEqual([]);
  });

  it('each allowed name is still spelled where it is allowed (a stale entry goes)', () => {
    const stale = Object.entries(SPELLED_BY).flatMap(([file, { names }]) =>
      names.filter((n) => !spelled.some((l) => l.file === file && l.name === n)).map((n) => `${file} ${n}`),
    );
    expect(stale).toEqual([]);
  });
});
