/**
 * The workflow bundle, built once by `npm run build` instead of by every worker at start. Bundling pulls in
 * webpack and takes seconds of CPU and ~100 MiB of heap; a prebuilt bundle lets the worker start fast and run
 * under a small heap cap (docs/performance.md). The bundle is built from the same compiled `dist/workflows`
 * in the same build, so it cannot drift from the activities it is deployed with.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DefaultLogger, bundleWorkflowCode } from '@temporalio/worker';

/** Where `npm run build` writes the bundle, next to the compiled code. */
export const WORKFLOW_BUNDLE_PATH = path.join(__dirname, '..', 'workflow-bundle.js');

/** The worker's workflow source: the prebuilt bundle when present, else the workflows module (bundled now). */
export function workflowSource(): { workflowBundle: { codePath: string } } | { workflowsPath: string } {
  return fs.existsSync(WORKFLOW_BUNDLE_PATH)
    ? { workflowBundle: { codePath: WORKFLOW_BUNDLE_PATH } }
    : { workflowsPath: require.resolve('../workflows') };
}

async function main(): Promise<void> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    logger: new DefaultLogger('WARN'),
  });
  fs.writeFileSync(WORKFLOW_BUNDLE_PATH, code);
  process.stdout.write(
    `workflow bundle: ${path.relative(process.cwd(), WORKFLOW_BUNDLE_PATH)} (${Math.round(code.length / 1024)} KiB)\n`,
  );
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`workflow bundle: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
