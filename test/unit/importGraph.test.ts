/**
 * No import cycles in the product (CONTRIBUTING.md): every module under src/ can be read, and
 * loaded, after the modules it imports. A type-only import counts: it is still a dependency of the reader, and a
 * shape both sides need belongs in a module of its own. Each file's imports are read with the TypeScript
 * compiler's pre-processor (static, `export … from`, dynamic `import()` and `require`); relative specifiers are
 * resolved as the compiler does (`x.ts`, then `x/index.ts`); packages are not followed.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const SRC = path.join(__dirname, '..', '..', 'src');

type Graph = Map<string, string[]>;

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

function resolveRelative(from: string, specifier: string): string | undefined {
  const base = path.resolve(path.dirname(from), specifier);
  return [`${base}.ts`, path.join(base, 'index.ts')].find((c) => fs.existsSync(c));
}

/** src/'s import graph: each file (relative to src/) to the src files it imports. */
function srcGraph(): Graph {
  const graph: Graph = new Map();
  for (const file of sourceFiles(SRC)) {
    const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
    const targets = importedFiles
      .map((i) => i.fileName)
      .filter((s) => s.startsWith('.'))
      .map((s) => {
        const target = resolveRelative(file, s);
        if (target === undefined) throw new Error(`${path.relative(SRC, file)}: cannot resolve ${s}`);
        return path.relative(SRC, target);
      });
    graph.set(path.relative(SRC, file), [...new Set(targets)]);
  }
  return graph;
}

/** The cycles of a graph: its strongly connected components of more than one file, or a file importing itself. */
function cycles(graph: Graph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  // Tarjan's algorithm; src/ is about a hundred files, so recursion depth is no concern.
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('the import graph of src/', () => {
  test('the cycle finder finds a cycle, a self-import, and nothing in a graph without one', () => {
    const g = (edges: Record<string, string[]>): Graph => new Map(Object.entries(edges));
    expect(cycles(g({ a: ['b'], b: ['c'], c: ['a'], d: ['a'] }))).toEqual([['a', 'b', 'c']]);
    expect(cycles(g({ a: ['a'], b: ['a'] }))).toEqual([['a']]);
    expect(cycles(g({ a: ['b', 'c'], b: ['c'], c: [] }))).toEqual([]);
  });

  test('is read whole: every file, with type-only and re-exporting imports as edges', () => {
    const graph = srcGraph();
    expect(graph.size).toBe(sourceFiles(SRC).length);
    // A value import, a type-only import and an `export … from`, each seen.
    expect(graph.get(path.join('activities', 'index.ts'))).toContain(path.join('activities', 'postRun.ts'));
    expect(graph.get(path.join('workflows', 'index.ts'))).toContain(path.join('activities', 'index.ts'));
    expect(graph.get(path.join('contract', 'index.ts'))).toContain(path.join('contract', 'names.ts'));
  });

  test('has no cycle', () => {
    expect(cycles(srcGraph())).toEqual([]);
  });
});
