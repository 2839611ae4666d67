/**
 * The import boundaries eslint.config.mjs holds, checked against the real config: kafkajs (its types too) only
 * under src/kafka/; nothing under src/ imports the dev stack (devstack/, the CLI included: the dev commands have
 * their own entry), while the dev stack may use the product; neither src/ nor devstack/ imports tools/ or test/,
 * and tools/ does not import test/ (what the benchmark and the tests share lives in devstack/). The dev stack and
 * tools/ use the product as its built package (`poimen-relay/internal/*`), never src/ by relative path, and src/
 * does not name itself by the package's name; tools/ uses the dev stack as its build (`#devstack/*`), never
 * devstack/ by relative path, and the dev stack does not name itself that way.
 * ESLint runs in a child process (its flat config is
 * an ES module, which jest's module sandbox does not load); the sources are linted as text under the paths
 * given, so no file is written into src/.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '../..');

interface Case {
  file: string;
  code: string;
}

const LINT = `
const { ESLint } = require('eslint');
(async () => {
  const cases = JSON.parse(process.argv[1]);
  // The probes exist only as text, outside any tsconfig: no type information (the import rules need none).
  const eslint = new ESLint({
    cwd: process.cwd(),
    overrideConfig: {
      languageOptions: { parserOptions: { project: null, projectService: false } },
      rules: { '@typescript-eslint/no-floating-promises': 'off' },
    },
  });
  const out = [];
  for (const c of cases) {
    const [result] = await eslint.lintText(c.code, { filePath: c.file });
    out.push(result.messages.filter((m) => m.ruleId === '@typescript-eslint/no-restricted-imports').map((m) => m.line));
  }
  process.stdout.write(JSON.stringify(out));
})().catch((err) => { process.stderr.write(String(err && err.stack)); process.exit(1); });
`;

/** For each case, the lines the import-restriction rule reports. */
async function restrictedLines(cases: Case[]): Promise<number[][]> {
  const { stdout } = await promisify(execFile)(process.execPath, ['-e', LINT, JSON.stringify(cases)], {
    cwd: ROOT,
    timeout: 120_000,
  });
  return JSON.parse(stdout) as number[][];
}

const lines = (...imports: string[]) => imports.join('\n') + '\nexport {};\n';

describe('import boundaries (eslint.config.mjs)', () => {
  test('kafkajs only under src/kafka/, the dev stack from nowhere in src/, tools/ and test/ from neither', async () => {
    const kafkajs = "import { Kafka } from 'kafkajs';";
    const kafkajsType = "import type { Admin } from 'kafkajs';";
    const reexport = "export type { Admin } from 'kafkajs';";
    const cases: (Case & { expected: number[] })[] = [
      // Product code outside the port: every form of naming kafkajs is refused; the dev stack too.
      { file: 'src/ingest/probe.ts', code: lines(kafkajs, kafkajsType, reexport), expected: [1, 2, 3] },
      { file: 'src/ops/probe.ts', code: lines(kafkajsType), expected: [1] },
      { file: 'src/probe.ts', code: lines(kafkajsType), expected: [1] },
      { file: 'devstack/probe.ts', code: lines(kafkajsType), expected: [1] },
      { file: 'devstack/stack/probe.ts', code: lines(kafkajs), expected: [1] },
      // The port itself may.
      { file: 'src/kafka/probe.ts', code: lines(kafkajs, kafkajsType), expected: [] },
      // The dev stack: refused to all of src/ (any depth, the CLI and its entry included).
      {
        file: 'src/ingest/probe.ts',
        code: lines("import { LocalStack } from '../../devstack/stack/stack';", "import '../../devstack';"),
        expected: [1, 2],
      },
      {
        file: 'src/probe.ts',
        code: lines("import { readPid } from '../devstack/stack/processes';"),
        expected: [1],
      },
      {
        file: 'src/kafka/probe.ts',
        code: lines("import { runDemo } from '../../devstack/demo';"),
        expected: [1],
      },
      {
        file: 'src/workflows/probe.ts',
        code: lines("import type { LocalStack } from '../../devstack/stack/stack';"),
        expected: [1],
      },
      {
        file: 'src/cli/program.ts',
        code: lines(
          "import { stackCommand } from '../../devstack/cli/stackCommands';",
          "import type { StackConfig } from '../../devstack/config';",
        ),
        expected: [1, 2],
      },
      { file: 'src/cli/main.ts', code: lines("import '../../devstack/cli/main';"), expected: [1] },
      // Workflow code takes values only from the contract's pure modules; other modules as types at most.
      {
        file: 'src/workflows/probe.ts',
        code: lines("import { RETRY_DEFAULTS } from '../config/defaults';"),
        expected: [1],
      },
      { file: 'src/workflows/probe.ts', code: lines("import { VERSION } from '../version';"), expected: [1] },
      {
        file: 'src/workflows/probe.ts',
        code: lines("import { topics } from '../contract/names';"),
        expected: [],
      },
      {
        file: 'src/workflows/probe.ts',
        code: lines("import type { Logger } from '../logger';"),
        expected: [],
      },
      // The workflow's own shapes and patch ids live in the contract, beside the names and the validator.
      {
        file: 'src/workflows/probe.ts',
        code: lines(
          "import { DEFAULT_DISPATCH_POLICY, type DispatchInput } from '../contract/workflow';",
          "import { validateDispatch } from '../contract/dispatch';",
        ),
        expected: [],
      },
      // Not the contract's Node-only modules, nor its barrel (which re-exports them), other than as types.
      {
        file: 'src/workflows/probe.ts',
        code: lines(
          "import { buildDlqRecord } from '../contract/dlqRecord';",
          "import { topics } from '../contract';",
          "import type { DlqRecord } from '../contract';",
        ),
        expected: [1, 2],
      },
      // The contract modules workflow code takes values from run in the sandbox too: the same rules hold there.
      {
        file: 'src/contract/workflow.ts',
        code: lines(
          "import fs from 'node:fs';",
          "import { RETRY_DEFAULTS } from '../config/defaults';",
          "import type { Logger } from '../logger';",
          "import { topics } from './names';",
        ),
        expected: [1, 2],
      },
      // The dev stack uses itself and the product, as its built package: never src/ by relative path.
      {
        file: 'devstack/cli/probe.ts',
        code: lines(
          "import { runDemo } from '../demo';",
          "import { LocalStack } from '../stack/stack';",
          "import { createSilentKafka } from 'poimen-relay/internal/kafka/client';",
        ),
        expected: [],
      },
      {
        file: 'devstack/probe.ts',
        code: lines(
          "import { LocalStack } from './stack/stack';",
          "import { topics } from 'poimen-relay/internal/contract/index';",
          "import { topics as t } from '../src/contract';",
          "import type { Dispatch } from '../src/contract/dispatch';",
        ),
        expected: [3, 4],
      },
      {
        file: 'devstack/stack/probe.ts',
        code: lines("import { waitFor } from '../../src/poll';", "import '../../src';"),
        expected: [1, 2],
      },
      // src/ names its own modules by relative path, never by the package's name.
      {
        file: 'src/ingest/probe.ts',
        code: lines(
          "import { waitFor } from 'poimen-relay/internal/poll';",
          "import { topics } from 'poimen-relay';",
        ),
        expected: [1, 2],
      },
      {
        file: 'src/workflows/probe.ts',
        code: lines("import type { Logger } from 'poimen-relay/internal/logger';"),
        expected: [1],
      },
      // tools/ and test/: refused everywhere under src/ and the dev stack, the port included.
      {
        file: 'src/ingest/probe.ts',
        code: lines(
          "import { waitFor } from '../../test/support/wait';",
          "import { partitionsBehind } from '../../tools/bench/groupOffsets';",
        ),
        expected: [1, 2],
      },
      {
        file: 'devstack/stack/probe.ts',
        code: lines("import '../../tools/chaos/soak';"),
        expected: [1],
      },
      { file: 'devstack/probe.ts', code: lines("import '../test/support/names';"), expected: [1] },
      { file: 'src/kafka/probe.ts', code: lines("import '../../test/support/names';"), expected: [1] },
      { file: 'src/cli/probe.ts', code: lines("import '../../tools/bench/main';"), expected: [1] },
      // tools/ shares with the tests through the dev stack, never test/ itself.
      {
        file: 'tools/bench/probe.ts',
        code: lines("import { RunsApiDouble } from '../../test/support/runsApiDouble';"),
        expected: [1],
      },
      {
        file: 'tools/chaos/probe.ts',
        code: lines(
          "import { RunsApiDouble } from '#devstack/runsApiDouble';",
          "import { Kafka } from 'kafkajs';",
          "import { waitFor } from 'poimen-relay/internal/poll';",
          "import type { StackProfile } from '#devstack/stack/profiles';",
          "import { soak } from './soak';",
          "import { rig } from '../bench/rig';",
        ),
        expected: [],
      },
      // tools/ uses the dev stack as its build: never devstack/ by relative path, type imports and re-exports
      // included (either would compile a copy of devstack/ into dist-tools/).
      {
        file: 'tools/bench/probe.ts',
        code: lines(
          "import { freePort } from '../../devstack/ports';",
          "import type { RunsApiDouble } from '../../devstack/runsApiDouble';",
          "export { activeControllerFromQuorumState } from '../../devstack/stack/quorumState';",
          "import '../devstack/config';",
        ),
        expected: [1, 2, 3, 4],
      },
      // The built dev stack is still the dev stack: refused under src/; the dev stack names itself by path.
      {
        file: 'src/ingest/probe.ts',
        code: lines("import { freePort } from '#devstack/ports';", "import '#devstack';"),
        expected: [1, 2],
      },
      {
        file: 'src/workflows/probe.ts',
        code: lines("import type { LocalStack } from '#devstack/stack/stack';"),
        expected: [1],
      },
      { file: 'src/kafka/probe.ts', code: lines("import '#devstack/kafka';"), expected: [1] },
      {
        file: 'devstack/stack/probe.ts',
        code: lines(
          "import { freePort } from '#devstack/ports';",
          "import { freePort as p } from '../ports';",
        ),
        expected: [1],
      },
      // tools/ uses the product as its built package too.
      {
        file: 'tools/bench/probe.ts',
        code: lines(
          "import { waitFor } from '../../src/poll';",
          "import type { Dispatch } from '../../src/contract';",
        ),
        expected: [1, 2],
      },
      // What product code does import stays allowed.
      {
        file: 'src/ingest/probe.ts',
        code: lines(
          "import type { KafkaRecord } from '../kafka/port';",
          "import { waitUntil } from '../poll';",
          "import { topics } from '../contract';",
        ),
        expected: [],
      },
    ];
    const got = await restrictedLines(cases);
    expect(cases.map((c, i) => ({ file: c.file, code: c.code, reported: got[i] }))).toEqual(
      cases.map((c) => ({ file: c.file, code: c.code, reported: c.expected })),
    );
  });
});
