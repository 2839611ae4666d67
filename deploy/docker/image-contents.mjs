#!/usr/bin/env node
/* global process, console -- a standalone Node script */
/* eslint no-restricted-syntax: "off" -- not the relay: its own environment, no config module */
// What the Dockerfile's runtime stage holds, computed without a Docker builder: the same steps run in a
// scratch directory (npm ci, then prune --omit=dev, which is `npm ci --omit=dev`; the TypeScript build and the
// workflow bundle; the core-bridge pruning), then every file the runtime stage COPYs is listed with its size.
// The base image (node:24-bookworm-slim) comes on top and is not counted.
//   node deploy/docker/image-contents.mjs [--arch amd64|arm64] [--json] [--keep DIR]
// Needs the repository's dev dependencies (tsc) and the npm registry (or npm's cache).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const arch = option('--arch', 'amd64');
const asJson = args.includes('--json');
const keep = option('--keep', undefined);

/** Apparent size of every regular file under dir, by path relative to dir. */
function files(dir, base = dir, out = new Map()) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) files(full, base, out);
    else if (entry.isFile()) out.set(path.relative(base, full), fs.statSync(full).size);
  }
  return out;
}
const sum = (map, prefix = '') =>
  [...map].filter(([p]) => p.startsWith(prefix)).reduce((total, [, size]) => total + size, 0);
/** node_modules/<name> or node_modules/@scope/<name> of a path, or undefined. */
function packageOf(p) {
  const parts = p.split(path.sep);
  const at = parts.lastIndexOf('node_modules');
  if (at < 0) return undefined;
  return parts[at + 1]?.startsWith('@') ? `${parts[at + 1]}/${parts[at + 2]}` : parts[at + 1];
}

const work = keep ?? fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-image-'));
const app = path.join(work, 'app');
fs.mkdirSync(app, { recursive: true });
const run = (cmd, cmdArgs, cwd = app) =>
  execFileSync(cmd, cmdArgs, {
    cwd,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, NO_UPDATE_NOTIFIER: '1' },
  });
try {
  for (const f of ['package.json', 'package-lock.json'])
    fs.copyFileSync(path.join(repo, f), path.join(app, f));
  run('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error']);
  run(
    path.join(repo, 'node_modules', '.bin', 'tsc'),
    ['-p', path.join(repo, 'tsconfig.build.json'), '--outDir', path.join(app, 'dist')],
    repo,
  );
  run(process.execPath, [path.join(app, 'dist', 'worker', 'workflowBundle.js')]);
  const bridgeReleases = path.join(app, 'node_modules', '@temporalio', 'core-bridge', 'releases');
  const bridgeBefore = sum(files(path.join(app, 'node_modules', '@temporalio', 'core-bridge')));
  const releasesBefore = fs.readdirSync(bridgeReleases).sort();
  run('sh', [
    path.join(repo, 'deploy', 'docker', 'prune-core-bridge.sh'),
    arch,
    path.join(app, 'node_modules'),
  ]);
  fs.cpSync(path.join(repo, 'bin'), path.join(app, 'bin'), { recursive: true });

  const all = files(app);
  // The dev stack (devstack/: the local Kafka + Temporal stack, the demo, the sample runs API and their
  // poimen-dev entry) is never in the image: a file of it here fails the listing.
  const devStack = [...all.keys()].filter(
    (p) =>
      !p.startsWith(`node_modules${path.sep}`) &&
      /(^|\/)(dist-)?devstack(\/|$)|poimen-dev|(^|\/)demo\.js$/.test(p),
  );
  const byPackage = new Map();
  for (const [p, size] of all) {
    const pkg = packageOf(p);
    if (pkg) byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + size);
  }
  const devDependencies = Object.keys(
    JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8')).devDependencies ?? {},
  );
  const report = {
    arch,
    totalBytes: sum(all),
    files: all.size,
    parts: Object.fromEntries(
      ['package.json', 'package-lock.json', 'bin/', 'dist/', 'node_modules/'].map((p) => [p, sum(all, p)]),
    ),
    distDirs: Object.fromEntries(
      fs
        .readdirSync(path.join(app, 'dist'), { withFileTypes: true })
        .map((e) => [e.isDirectory() ? `${e.name}/` : e.name, sum(all, path.join('dist', e.name))])
        .sort((a, b) => b[1] - a[1]),
    ),
    packages: byPackage.size,
    largestPackages: [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 12),
    coreBridge: {
      releasesBefore,
      releasesAfter: fs.readdirSync(bridgeReleases).sort(),
      bytesBefore: bridgeBefore,
      bytesAfter: sum(all, path.join('node_modules', '@temporalio', 'core-bridge')),
    },
    // Root devDependencies that are in the image anyway, because a production dependency needs them too
    // (@temporalio/worker's bundler loads @swc/core): expected, but worth seeing.
    devDependenciesAlsoNeeded: devDependencies.filter((d) => byPackage.has(d)),
    devStackFiles: devStack,
  };
  if (asJson) {
    console.log(JSON.stringify(report, null, 2));
  } else {
    const mb = (n) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
    console.log(
      `runtime stage for ${arch}: ${report.files} files, ${mb(report.totalBytes)} on top of the base image`,
    );
    for (const [p, size] of Object.entries(report.parts)) console.log(`  ${p.padEnd(20)} ${mb(size)}`);
    const kib = (n) => `${Math.round(n / 1024)} KiB`;
    console.log(
      `dist/: ${Object.entries(report.distDirs)
        .filter(([d]) => d.endsWith('/') || d.endsWith('bundle.js'))
        .map(([d, s]) => `${d} ${kib(s)}`)
        .join(', ')}`,
    );
    console.log(`node_modules: ${report.packages} packages; largest:`);
    for (const [name, size] of report.largestPackages) console.log(`  ${name.padEnd(36)} ${mb(size)}`);
    const b = report.coreBridge;
    console.log(
      `core-bridge: ${mb(b.bytesBefore)} (${b.releasesBefore.join(', ')}) -> ${mb(b.bytesAfter)} (${b.releasesAfter.join(', ')})`,
    );
    console.log(
      `root devDependencies also needed at run time: ${report.devDependenciesAlsoNeeded.join(', ') || 'none'}`,
    );
    console.log(`dev stack files: ${devStack.length === 0 ? 'none' : devStack.join(', ')}`);
  }
  if (devStack.length > 0) {
    console.error(`image-contents: the dev stack is in the image: ${devStack.join(', ')}`);
    process.exitCode = 1;
  }
} finally {
  if (!keep) fs.rmSync(work, { recursive: true, force: true });
}
