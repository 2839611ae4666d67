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
/**
 * The same workflows with OpenTelemetry's workflow interceptors, run only while tracing is on: the plain bundle
 * makes no span and calls no sink, so tracing off costs nothing in the workflow.
 */
export const TRACED_WORKFLOW_BUNDLE_PATH = path.join(__dirname, '..', 'workflow-bundle-traced.js');
/** What the traced bundle adds (tracing/tracing.ts has the rest of the tracing). */
const WORKFLOW_TRACING_MODULE =
  require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

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

export type WorkflowSource = (
  { workflowBundle: { codePath: string } } | { workflowsPath: string; workflowModules: string[] }
) & {
  note: 'prebuilt bundle' | 'no prebuilt bundle: bundling now' | 'stale bundle ignored: bundling now';
};

const bundlePath = (traced: boolean) => (traced ? TRACED_WORKFLOW_BUNDLE_PATH : WORKFLOW_BUNDLE_PATH);
const interceptorModules = (traced: boolean) => (traced ? [WORKFLOW_TRACING_MODULE] : []);

/**
 * The worker's workflow source: the prebuilt bundle (traced or plain) when it matches the compiled workflows,
 * else bundle now (the worker then adds `workflowModules`, the interceptors the bundle would have had).
 */
export function workflowSource(traced = false): WorkflowSource {
  const workflowsPath = require.resolve('../workflows');
  const codePath = bundlePath(traced);
  const stampPath = `${codePath}.sha256`;
  const workflowModules = interceptorModules(traced);
  if (!fs.existsSync(codePath) || !fs.existsSync(stampPath)) {
    return { workflowsPath, workflowModules, note: 'no prebuilt bundle: bundling now' };
  }
  if (fs.readFileSync(stampPath, 'utf8').trim() !== workflowsHash()) {
    return { workflowsPath, workflowModules, note: 'stale bundle ignored: bundling now' };
  }
  return { workflowBundle: { codePath }, note: 'prebuilt bundle' };
}

async function main(): Promise<void> {
  const stamp = workflowsHash();
  for (const traced of [false, true]) {
    const { code } = await bundleWorkflowCode({
      workflowsPath: require.resolve('../workflows'),
      workflowInterceptorModules: interceptorModules(traced),
      logger: new DefaultLogger('WARN'),
    });
    const codePath = bundlePath(traced);
    fs.writeFileSync(codePath, code);
    fs.writeFileSync(`${codePath}.sha256`, `${stamp}\n`);
    process.stdout.write(
      `workflow bundle: ${path.relative(process.cwd(), codePath)} (${Math.round(code.length / 1024)} KiB)\n`,
    );
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`workflow bundle: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
