/**
 * The workflow bundle, built once by `npm run build` instead of by every worker at start. Bundling pulls in
 * webpack and takes seconds of CPU and ~100 MiB of heap; a prebuilt bundle lets the worker start fast and run
 * under a small heap cap (docs/performance.md). A stamp (the hash of the compiled workflow code and contract it
 * was built from) travels with it: a build that recompiled the workflows without re-bundling (plain `tsc`, an IDE) leaves
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

/**
 * The compiled folders the bundle is made from: the workflow code and the contract modules it takes values from
 * (patch ids, task queue names, the default policy: src/contract/workflow.ts and its neighbours). All of the
 * contract, not only those: a stamp that misses one lets a plain `tsc` change a patch id under a bundle that
 * still has the old one.
 */
const BUNDLED_DIRS = ['workflows', 'contract'] as const;

/** Hash of the compiled modules (`.js`) the bundle is made from, under the compiled root `root`. */
export function compiledWorkflowHash(root: string = path.join(__dirname, '..')): string {
  const h = crypto.createHash('sha256');
  for (const dir of BUNDLED_DIRS) {
    for (const file of fs
      .readdirSync(path.join(root, dir))
      .filter((f) => f.endsWith('.js'))
      .sort()) {
      h.update(`${dir}/${file}`).update(fs.readFileSync(path.join(root, dir, file)));
    }
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
  if (fs.readFileSync(stampPath, 'utf8').trim() !== compiledWorkflowHash()) {
    return { workflowsPath, workflowModules, note: 'stale bundle ignored: bundling now' };
  }
  return { workflowBundle: { codePath }, note: 'prebuilt bundle' };
}

async function main(): Promise<void> {
  const stamp = compiledWorkflowHash();
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
