/**
 * The host tests' Temporal: a local dev server from the stack's cached temporal CLI (the SDK's own download cannot
 * work here, so the cached binary is required: provision it first), and the `dispatch` workflow bundled once.
 */
import fs from 'node:fs';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, bundleWorkflowCode } from '@temporalio/worker';
import { loadStackConfig } from '../../devstack/config';
import { temporalBinPath } from '../../devstack/stack/provision';

export interface WorkflowTestEnv {
  env: TestWorkflowEnvironment;
  workflowBundle: { code: string };
}

export async function startWorkflowTestEnv(): Promise<WorkflowTestEnv> {
  const bin = temporalBinPath(loadStackConfig());
  if (!fs.existsSync(bin)) {
    throw new Error(
      `the Temporal CLI is not at ${bin}: run \`node devstack/bin/poimen-dev.js stack provision\` first`,
    );
  }
  // Workers start and stop once per test; their INFO lines would bury a failure.
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  // Bundled once for all tests (seconds of webpack each time otherwise).
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../src/workflows'),
    logger: new DefaultLogger('WARN'),
  });
  const env = await TestWorkflowEnvironment.createLocal({
    server: { executable: { type: 'existing-path', path: bin }, ui: false },
  });
  return { env, workflowBundle };
}
