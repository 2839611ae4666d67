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

export default tseslint.config(
  { ignores: ['dist/**', 'dist-tools/**', 'node_modules/**', 'coverage/**', 'test-artifacts/**', 'bin/**'] },
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
    // scripts/ is CommonJS run by node before any build (npm test's preflight).
    files: ['*.js', '*.mjs', 'scripts/**/*.js'],
    languageOptions: {
      globals: { module: 'readonly', require: 'readonly', __dirname: 'readonly', process: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['src/config/**', 'test/**', 'tools/**', 'scripts/**', '*.mjs', '*.js'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  {
    files: ['src/workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: forbiddenInWorkflows.map((name) => ({
            name,
            message: 'Workflow code is deterministic: no Node builtins or I/O clients.',
            allowTypeImports: false,
          })),
          patterns: [
            {
              group: ['../activities', '../activities/*', '**/activities/**'],
              allowTypeImports: true,
              message: 'Workflows may only `import type` from activities.',
            },
            {
              // Barrels and Node-only modules would pull Buffer, crypto or zod into the sandbox bundle.
              regex: '^\\.\\./(contract(/index|/dlqRecord)?|config(/index|/env|/schema|/stack|/tls)?)$',
              allowTypeImports: true,
              message:
                'Workflows import only the pure modules ../contract/names, ../contract/dispatch, ../config/defaults.',
            },
          ],
        },
      ],
    },
  },
);
