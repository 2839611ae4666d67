// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

// Workflow code runs in Temporal's deterministic sandbox: it must not reach I/O,
// clocks or randomness outside the SDK, so those modules are banned by lint, not by review.
const forbiddenInWorkflows = [
  ...builtinModules,
  ...builtinModules.map((m) => `node:${m}`),
  'undici',
  'kafkajs',
  'prom-client',
  'pino',
  '@temporalio/activity',
  '@temporalio/client',
  '@temporalio/worker',
];

// The Kafka port (src/kafka/port.ts says why): kafkajs, its types included, is named only under src/kafka/.
const kafkaOnlyInPort = {
  paths: [
    {
      name: 'kafkajs',
      message: 'kafkajs is imported only under src/kafka/ (the Kafka port): use the names src/kafka exports.',
      allowTypeImports: false,
    },
  ],
  patterns: [],
};

// The product boundary: nothing under src/ (what ships) imports the dev stack (devstack/, at the repository's
// root: the local stack, the demo and their `poimen-dev` commands), tools/ or test/; none of them is in the image.
// Import paths are matched as written; src/ has no folder named devstack, tools or test, so a path naming one of
// them can only mean them. `#devstack/*` (package.json's `imports`: the built dev stack) is the dev stack too.
const devstack = {
  regex: '(^|/|#)devstack(/|$)',
  message:
    'Product code does not import the dev stack (devstack/): it is not part of the relay; its commands have their own entry.',
};
const outsideSrc = {
  regex: '^(\\.\\./)+(tools|test)(/|$)',
  message: 'Neither src/ nor devstack/ imports tools/ or test/: they are not the product, nor its dev stack.',
};
// The product as its built package (tsconfig.json says why): the dev stack and tools/ name a module of src/ as
// `poimen-relay/internal/<module>`, never by a relative path, which would compile a second copy of src/ into
// dist-devstack/ or dist-tools/. src/ itself names its modules by relative path only.
const srcByPath = {
  regex: '^(\\.\\./)+src(/|$)',
  message:
    'devstack/ and tools/ use the built product: import poimen-relay/internal/<module under src/>, not ../src.',
};
// The dev stack as its build (tsconfig.json says why): tools/ names a module of devstack/ as `#devstack/<module>`,
// never by a relative path, which would compile a second copy of devstack/ into dist-tools/. devstack/ itself
// names its modules by relative path only (its build maps no `#devstack/*`).
const devstackByPath = {
  regex: '^(\\.\\./)+devstack(/|$)',
  message: 'tools/ uses the built dev stack: import #devstack/<module under devstack/>, not ../devstack.',
};
const devstackSelfByName = {
  regex: '^#devstack(/|$)',
  message: 'devstack/ imports its own modules by relative path: #devstack/* is for tools/.',
};
const selfByName = {
  regex: '^poimen-relay(/|$)',
  message:
    'src/ imports its own modules by relative path: poimen-relay/internal/* is for devstack/ and tools/.',
};
// The tracing port: OpenTelemetry and Temporal's OpenTelemetry interceptors are named only under src/tracing/.
const otelOnlyInPort = {
  group: [
    '@opentelemetry/*',
    '@temporalio/interceptors-opentelemetry',
    '@temporalio/interceptors-opentelemetry/*',
  ],
  message:
    'OpenTelemetry is imported only under src/tracing/ (the tracing port): use what src/tracing exports.',
};
const restrictImports = ({
  kafkajs = false,
  product = false,
  consumer = false,
  workflow = false,
  otel = false,
}) => [
  'error',
  {
    paths: [...(workflow ? workflowPaths : []), ...(kafkajs ? kafkaOnlyInPort.paths : [])],
    // Boundary patterns first: the rule reports only the first pattern an import matches, and a workflow
    // pattern that admits `import type` must not hide a boundary.
    patterns: [
      ...(product ? [devstack, selfByName] : []),
      ...(consumer ? [srcByPath, devstackSelfByName] : []),
      outsideSrc,
      ...(otel ? [otelOnlyInPort] : []),
      ...(workflow ? workflowPatterns : []),
    ],
  },
];

const workflowPaths = forbiddenInWorkflows.map((name) => ({
  name,
  message: 'Workflow code is deterministic: no Node builtins or I/O clients.',
  allowTypeImports: false,
}));
const workflowPatterns = [
  {
    group: ['../activities', '../activities/*', '**/activities/**'],
    allowTypeImports: true,
    message: 'Workflows may only `import type` from activities.',
  },
  {
    // An allow-list, not a deny-list: beyond the SDK and its own folder, workflow code takes values only from the
    // contract's pure modules; everything else (config, logger, version, barrels) is `import type` at most.
    // Not the boundaries' paths: typescript-eslint lets a type import through when any pattern allowing type
    // imports matches it, which would open the dev stack, tools and tests to `import type`.
    regex: '^\\.\\./(?!contract/(names|dispatch|workflow)$|(\\.\\./)*(devstack|tools|test)(/|$))',
    allowTypeImports: true,
    message:
      'Workflows import values only from ./ and ../contract/{names,dispatch,workflow} (else `import type`).',
  },
];

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'dist-tools/**',
      'dist-devstack/**',
      'node_modules/**',
      'coverage/**',
      'test-artifacts/**',
      'bin/**',
      'devstack/bin/**',
    ],
  },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: false } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[object.name='process'][property.name='env']",
          message: 'Only the config module (src/config/) reads process.env.',
        },
      ],
    },
  },
  {
    // One screen of concern per file: a file over 300 lines says why on its first line (eslint-disable max-lines).
    rules: { 'max-lines': ['error', { max: 300 }] },
  },
  {
    // Type-aware: a promise nobody awaits loses its rejection (an unhandled rejection stops the process) and its
    // ordering. Fire-and-forget is written `void p` with a reason. Only src/: the product's processes.
    files: ['src/**/*.ts'],
    languageOptions: {
      parserOptions: { project: './tsconfig.build.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: { '@typescript-eslint/no-floating-promises': 'error' },
  },
  {
    // The dev stack starts and stops processes: the same care with promises, under its own tsconfig.
    files: ['devstack/**/*.ts'],
    languageOptions: {
      parserOptions: { project: './devstack/tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: { '@typescript-eslint/no-floating-promises': 'error' },
  },
  {
    // scripts/ is CommonJS run by node before any build (npm test's preflight); test/support/*.js is what the
    // jest configs load before any transform.
    files: ['*.js', '*.mjs', 'scripts/**/*.js', 'test/support/*.js'],
    languageOptions: {
      globals: { module: 'readonly', require: 'readonly', __dirname: 'readonly', process: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // devstack/config.ts is the dev stack's config module: the only dev stack code that reads process.env.
    files: ['src/config/**', 'devstack/config.ts', 'test/**', 'tools/**', 'scripts/**', '*.mjs', '*.js'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/kafka/**', 'src/workflows/**', 'src/tracing/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': restrictImports({
        kafkajs: true,
        product: true,
        otel: true,
      }),
    },
  },
  {
    files: ['src/tracing/**/*.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': restrictImports({ kafkajs: true, product: true }) },
  },
  {
    files: ['src/kafka/**/*.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': restrictImports({ product: true }) },
  },
  {
    // The benchmark and the chaos soak share what they need with the tests through the dev stack, never test/;
    // they use the product and the dev stack as built (poimen-relay/internal/*, #devstack/*).
    files: ['tools/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+test(/|$)',
              message:
                'tools/ does not import test/: what both need lives in devstack/ (e.g. devstack/runsApiDouble).',
            },
            srcByPath,
            devstackByPath,
          ],
        },
      ],
    },
  },
  {
    // The dev stack may use the product (as poimen-relay/internal/*; kafkajs only through src/kafka), never
    // tools/ or test/; itself by relative path, not as #devstack/*.
    files: ['devstack/**/*.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': restrictImports({ kafkajs: true, consumer: true }) },
  },
  {
    // Workflow code, and the contract modules it takes values from: they run in the workflow sandbox too.
    files: ['src/workflows/**/*.ts', 'src/contract/{names,dispatch,workflow}.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': restrictImports({
        workflow: true,
        product: true,
        otel: true,
      }),
    },
  },
);
