import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * The folder holding the relay's package.json. Found by walking up rather than by a fixed depth: the module runs
 * compiled in dist/ (the image; the dev stack and the tools, which use the built package) and as source under jest.
 */
export const PACKAGE_ROOT: string = ((): string => {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${__dirname}`);
  }
})();

/** The package version, sent as `user-agent: poimen-relay/<version>` (contract §5). */
export const VERSION: string = (
  JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }
).version;

/**
 * What is running, for `poimen_relay_build_info`: the package version, the Node.js version and the git commit.
 * The commit is the one the image build recorded in `build-info.json` beside package.json (`{"commit": "<sha>"}`,
 * written from the build's GIT_COMMIT argument), else the HEAD of the git checkout the package runs from (a
 * source checkout: dev, CI, the tests), else "unknown". Read once at start.
 */
export interface BuildInfo {
  version: string;
  nodeVersion: string;
  commit: string;
}

const SHA = /^[0-9a-f]{7,64}$/;

function recordedCommit(dir: string): string | undefined {
  try {
    const { commit } = JSON.parse(fs.readFileSync(path.join(dir, 'build-info.json'), 'utf8')) as {
      commit?: unknown;
    };
    return typeof commit === 'string' && SHA.test(commit) ? commit : undefined;
  } catch {
    return undefined;
  }
}

function checkoutCommit(dir: string): string | undefined {
  // Only a directory that is itself a checkout: a package installed inside someone else's repository must not
  // report that repository's commit. `.git` is a directory, or a file in a worktree.
  if (!fs.existsSync(path.join(dir, '.git'))) return undefined;
  const git = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: dir, encoding: 'utf8', timeout: 5_000 });
  const sha = git.status === 0 ? git.stdout.trim() : '';
  return SHA.test(sha) ? sha : undefined;
}

export function readBuildInfo(dir: string = PACKAGE_ROOT): BuildInfo {
  let version = 'unknown';
  try {
    version = (JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string })
      .version;
  } catch {
    // A directory without package.json (tests): the version stays unknown, the rest is still told.
  }
  return {
    version,
    nodeVersion: process.version,
    commit: recordedCommit(dir) ?? checkoutCommit(dir) ?? 'unknown',
  };
}
