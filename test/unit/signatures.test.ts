/**
 * The argument shapes of everything a Temporal history names — the `dispatch` workflow and each registered
 * activity — are pinned in test/fixtures/signatures.json. During a rolling deploy an older worker takes tasks
 * scheduled by a newer one under the same name, and recorded histories replay the old shapes: a shape changed
 * under an existing name sends a wrong body (an older `postRun` given `(head, bytes)` posted `"input": null`).
 * The rule this enforces: a changed shape gets a new name (or a `patched()` branch that schedules a new name);
 * a name, once shipped, is never removed while histories may still schedule it.
 *
 * The one compatible change under a name: an optional field, absent from every earlier input, ignored by earlier
 * code, whose absence means the earlier behaviour (the policy's `deadLetterTimeoutMs`; its `maxDurationMs` and
 * `attemptCap`, beside which `maxAttempts` keeps its meaning for earlier workers). It still changes the
 * pinned text, so the fixture is updated deliberately in the same commit, never re-pinned wholesale.
 *
 * The shapes are read from the TypeScript types with the compiler, expanded structurally, so a field added,
 * removed, retyped or made optional anywhere below an argument changes the pinned text.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(ROOT, 'test', 'fixtures', 'signatures.json');

function program(): ts.Program {
  const configPath = path.join(ROOT, 'tsconfig.json');
  const config = ts.readConfigFile(configPath, (p) => ts.sys.readFile(p));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  return ts.createProgram(
    [path.join(ROOT, 'src', 'activities', 'index.ts'), path.join(ROOT, 'src', 'workflows', 'index.ts')],
    parsed.options,
  );
}

/** A canonical, structural text of a type: object members sorted, named library types kept by name. */
function shape(checker: ts.TypeChecker, type: ts.Type, depth = 0): string {
  if (depth > 12) return '…';
  // Library classes and interfaces (Uint8Array) by name; library type operators (Omit, Partial) expanded.
  const sym = type.getSymbol();
  const lib = sym?.getDeclarations()?.[0]?.getSourceFile().fileName.includes('/node_modules/') ?? false;
  const mapped = ((type as ts.ObjectType).objectFlags ?? 0) & ts.ObjectFlags.Mapped;
  if (lib && !mapped && sym!.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.Class)) {
    return checker.typeToString(type);
  }
  if (type.isUnion()) {
    // An optional member's type includes `undefined`; its `?` already says so.
    return type.types
      .filter((t) => !(t.flags & ts.TypeFlags.Undefined))
      .map((t) => shape(checker, t, depth + 1))
      .sort()
      .join(' | ');
  }
  if (checker.isArrayType(type)) {
    const [el] = checker.getTypeArguments(type as ts.TypeReference);
    return `${el ? shape(checker, el, depth + 1) : 'unknown'}[]`;
  }
  if (type.flags & ts.TypeFlags.Object) {
    const members = checker
      .getPropertiesOfType(type)
      .map((p) => {
        const decl = p.valueDeclaration ?? p.declarations?.[0];
        const t = decl ? checker.getTypeOfSymbolAtLocation(p, decl) : checker.getDeclaredTypeOfSymbol(p);
        const optional = p.flags & ts.SymbolFlags.Optional ? '?' : '';
        return `${p.name}${optional}: ${shape(checker, t, depth + 1)}`;
      })
      .sort();
    return `{ ${members.join('; ')} }`;
  }
  return checker.typeToString(type);
}

function parameters(checker: ts.TypeChecker, sig: ts.Signature): string[] {
  return sig.getParameters().map((p) => {
    const decl = p.valueDeclaration as ts.ParameterDeclaration;
    const t = checker.getTypeOfSymbolAtLocation(p, decl);
    const optional = decl.questionToken ? '?' : '';
    return `${p.name}${optional}: ${shape(checker, t)}`;
  });
}

function currentSignatures(): Record<string, string[]> {
  const prog = program();
  const checker = prog.getTypeChecker();
  const out: Record<string, string[]> = {};
  const activities = prog.getSourceFile(path.join(ROOT, 'src', 'activities', 'index.ts'))!;
  const workflows = prog.getSourceFile(path.join(ROOT, 'src', 'workflows', 'index.ts'))!;
  const exported = (sf: ts.SourceFile, name: string) =>
    checker.getExportsOfModule(checker.getSymbolAtLocation(sf)!).find((s) => s.name === name)!;

  const factory = exported(activities, 'createActivities');
  const [factorySig] = checker.getTypeOfSymbol(factory).getCallSignatures();
  for (const act of checker.getPropertiesOfType(factorySig!.getReturnType())) {
    const [sig] = checker.getTypeOfSymbol(act).getCallSignatures();
    out[`activity ${act.name}`] = parameters(checker, sig!);
  }
  const [wfSig] = checker.getTypeOfSymbol(exported(workflows, 'dispatch')).getCallSignatures();
  out['workflow dispatch'] = parameters(checker, wfSig!);
  return out;
}

const pinned = JSON.parse(fs.readFileSync(FIXTURE, 'utf8')) as Record<string, string[]>;
const current = currentSignatures();

test.each(Object.keys(pinned))('%s keeps its pinned argument shape and is still registered', (name) => {
  expect(current[name]).toEqual(pinned[name]);
});

test('every registered activity and workflow has a pinned shape (a new name is added to the fixture)', () => {
  expect(Object.keys(current).sort()).toEqual(Object.keys(pinned).sort());
});

if (process.env.POIMEN_PIN_SIGNATURES === '1') {
  // Only for a NEW name: rewrites the fixture from the code. Review the diff: an existing entry must not change.
  fs.writeFileSync(FIXTURE, `${JSON.stringify(current, null, 2)}\n`);
}
