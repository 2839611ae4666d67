/**
 * A build of an earlier commit of this repository, for tests that run two versions side by side (a rolling
 * deploy). Taken from git (`git archive`, so the checkout is untouched), compiled with this checkout's
 * node_modules (the commits used share the dependency set), and cached outside the repo by commit.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { loadStackConfig } from '../../devstack/config';
import { REPO_ROOT } from './cli';

export function earlierBuild(commit: string): string {
  const dir = path.join(loadStackConfig().cacheDir, 'earlier-builds', commit);
  if (fs.existsSync(path.join(dir, 'dist', 'workflow-bundle.js'))) {
    linkDependencies(dir);
    return dir;
  }
  const tmp = `${dir}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp, { recursive: true });
  const archive = execFileSync('git', ['-C', REPO_ROOT, 'archive', '--format=tar', commit], {
    maxBuffer: 256 * 1024 * 1024,
  });
  execFileSync('tar', ['-x', '-C', tmp], { input: archive });
  linkDependencies(tmp);
  const run = (args: string[]) => execFileSync(process.execPath, args, { cwd: tmp, stdio: 'pipe' });
  run([path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json']);
  run(['dist/worker/workflowBundle.js']);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.renameSync(tmp, dir);
  return dir;
}

/**
 * The cache outlives the checkout that made it (CI clones afresh each run): its node_modules link is pointed at this
 * checkout's, replaced in one rename so a process already running the build never sees it missing.
 */
function linkDependencies(dir: string): void {
  const link = path.join(dir, 'node_modules');
  const target = path.join(REPO_ROOT, 'node_modules');
  if (readLink(link) === target) return;
  const tmp = `${link}.tmp-${process.pid}-${randomUUID()}`;
  fs.rmSync(tmp, { force: true });
  fs.symlinkSync(target, tmp);
  fs.renameSync(tmp, link);
}

function readLink(link: string): string | undefined {
  try {
    return fs.readlinkSync(link);
  } catch {
    return undefined;
  }
}
