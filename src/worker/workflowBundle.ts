/**
 * The workflow bundle, built once by `npm run build` instead of by every worker at start. Bundling pulls in
 * webpack and takes seconds of CPU and ~100 MiB of heap; a prebuilt bundle lets the worker start fast and run
 * under a small heap cap (docs/performance.md). A stamp (the hash of the compiled workflow code it was built
 * from) travels with it: a build that recompiled the workflows without re-bundling (plain `tsc`, an IDE) leaves
 * a stale bundle, which the worker then ignores and bundles anew, rather than run old workflow code.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { DefaultLogger, bundleWorkflowCode } from '@temporalio/worker';

/** Where `npm run build` writes the bundle, next to the compiled code. */
export const WORKFLOW_BUNDLE_PATH = path.join(__dirname, '..', 'workflow-bundle.js');

const STAMP_PATH = `${WORKFLOW_BUNDLE_PATH}.sha256`;
const WORKFLOWS_DIR = path.join(__dirname, '..', 'workflows');

/** Hash of the compiled workflow modules the bundle is made from. */
function workflowsHash(): string {
  const h = crypto.createHash('sha256');
  for (const file of fs
    .readdirSync(WORKFLOWS_DIR)
    .filter((f) => f.endsWith('.js'))
    .sort()) {
    h.update(file).update(fs.readFileSync(path.join(WORKFLOWS_DIR, file)));
  }
  return h.digest('hex');
}

export type WorkflowSource = ({ workflowBundle: { codePath: string } } | { workflowsPath: string }) & {
  note: 'prebuilt bundle' | 'no prebuilt bundle: bundling now' | 'stale bundle ignored: bundling now';
};

/** The worker's workflow source: the prebuilt bundle when it matches the compiled workflows, else bundle now. */
export function workflowSource(): WorkflowSource {
  const workflowsPath = require.resolve('../workflows');
  if (!fs.existsSync(WORKFLOW_BUNDLE_PATH) || !fs.existsSync(STAMP_PATH)) {
    return { workflowsPath, note: 'no prebuilt bundle: bundling now' };
  }
  if (fs.readFileSync(STAMP_PATH, 'utf8').trim() !== workflowsHash()) {
    return { workflowsPath, note: 'stale bundle ignored: bundling now' };
  }
  return { workflowBundle: { codePath: WORKFLOW_BUNDLE_PATH }, note: 'prebuilt bundle' };
}

async function main(): Promise<void> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    logger: new DefaultLogger('WARN'),
  });
  const stamp = workflowsHash();
  fs.writeFileSync(WORKFLOW_BUNDLE_PATH, code);
  fs.writeFileSync(STAMP_PATH, `${stamp}\n`);
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
