/**
 * The import boundaries eslint.config.mjs holds, checked against the real config: kafkajs (its types too) only
 * under src/kafka/; product code never imports the dev stack (only the `stack` and `demo` commands and the dev
 * stack itself do); nothing under src/ imports tools/ or test/. ESLint runs in a child process (its flat config is
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
  test('kafkajs only under src/kafka/, the dev stack only from itself and its two commands, tools/ and test/ from nowhere in src/', async () => {
    const kafkajs = "import { Kafka } from 'kafkajs';";
    const kafkajsType = "import type { Admin } from 'kafkajs';";
    const reexport = "export type { Admin } from 'kafkajs';";
    const cases: (Case & { expected: number[] })[] = [
      // Product code outside the port: every form of naming kafkajs is refused.
      { file: 'src/ingest/probe.ts', code: lines(kafkajs, kafkajsType, reexport), expected: [1, 2, 3] },
      { file: 'src/ops/probe.ts', code: lines(kafkajsType), expected: [1] },
      { file: 'src/probe.ts', code: lines(kafkajsType), expected: [1] },
      { file: 'src/devstack/probe.ts', code: lines(kafkajsType), expected: [1] },
      // The port itself may.
      { file: 'src/kafka/probe.ts', code: lines(kafkajs, kafkajsType), expected: [] },
      // The dev stack: refused to product code (any depth), allowed to itself and the stack/demo commands.
      {
        file: 'src/ingest/probe.ts',
        code: lines("import { LocalStack } from '../devstack/stack/stack';", "import '../devstack';"),
        expected: [1, 2],
      },
      {
        file: 'src/probe.ts',
        code: lines("import { readPid } from './devstack/stack/processes';"),
        expected: [1],
      },
      {
        file: 'src/kafka/probe.ts',
        code: lines("import { runDemo } from '../devstack/demo';"),
        expected: [1],
      },
      {
        file: 'src/workflows/probe.ts',
        code: lines("import type { LocalStack } from '../devstack/stack/stack';"),
        expected: [1],
      },
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
      {
        file: 'src/cli/demoCommand.ts',
        code: lines("import { runDemo } from '../devstack/demo';"),
        expected: [],
      },
      {
        file: 'src/cli/stackCommands.ts',
        code: lines("import { LocalStack } from '../devstack/stack/stack';"),
        expected: [],
      },
      {
        file: 'src/devstack/probe.ts',
        code: lines("import { LocalStack } from './stack/stack';"),
        expected: [],
      },
      // tools/ and test/: refused everywhere under src/, the dev stack and the port included.
      {
        file: 'src/ingest/probe.ts',
        code: lines(
          "import { waitFor } from '../../test/support/wait';",
          "import { partitionsBehind } from '../../tools/bench/groupOffsets';",
        ),
        expected: [1, 2],
      },
      {
        file: 'src/devstack/stack/probe.ts',
        code: lines("import '../../../tools/chaos/soak';"),
        expected: [1],
      },
      { file: 'src/kafka/probe.ts', code: lines("import '../../test/support/names';"), expected: [1] },
      { file: 'src/cli/demoCommand.ts', code: lines("import '../../tools/bench/main';"), expected: [1] },
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
