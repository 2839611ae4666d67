// @ts-check
/**
 * The first step of `npm test` (before build, type-check and lint, so it is plain JavaScript): the host tools
 * the suites need are there, or it installs them with apt-get when it runs as root on Debian/Ubuntu, or it
 * stops within seconds with one line naming the command. What is needed and why: scripts/preflightPlan.js.
 */
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { MIN_GO, atLeast, missingRequirements, planPreflight } = require('./preflightPlan');

/**
 * @typedef {import('./preflightPlan').Facts} Facts
 * @typedef {import('./preflightPlan').CgroupFact} CgroupFact
 * @typedef {{
 *   run: (cmd: string, args: string[]) => { ok: boolean, output: string },
 *   exists: (file: string) => boolean,
 *   readdir: (dir: string) => string[],
 *   root: boolean,
 *   arch: string,
 *   env: NodeJS.ProcessEnv,
 *   memoryCgroup: () => CgroupFact,
 * }} Host
 * Everything the detection asks of the machine, so a test can describe one.
 */

/** The same binaries the suites use: the Web UI test's and the transport-security suite's fixed paths. */
const CHROMIUM_DEFAULT = '/usr/bin/chromium';
const HAPROXY_PATHS = ['/usr/sbin/haproxy', '/usr/bin/haproxy'];

/** @param {Host} host @returns {string | null} */
function aptGoVersion(host) {
  const policy = host.run('apt-cache', ['policy', 'golang-go']);
  return /Candidate:\s*(?:\d+:)?(\d+\.\d+)/.exec(policy.output)?.[1] ?? null;
}

/** @param {Host} host @returns {Facts['tools']} */
function detectTools(host) {
  const java = host.run('java', ['-version']);
  // `openjdk version "17.0.18"`; Java 8 and older say "1.8.0_…".
  const v = /version "(\d+)(?:\.(\d+))?/.exec(java.output);
  const javaMajor = v ? (v[1] === '1' ? Number(v[2]) : Number(v[1])) : 0;
  const javac = host.run('javac', ['-version']).ok;
  const go = host.run('go', ['env', 'GOVERSION']);
  const goOk = go.ok && atLeast(go.output, MIN_GO);
  return {
    jdk: {
      ok: java.ok && javaMajor >= 17 && javac,
      ...(java.ok && javaMajor < 17 ? { found: `java ${javaMajor}` } : {}),
      ...(java.ok && javaMajor >= 17 && !javac ? { found: 'a JRE without javac' } : {}),
    },
    mvn: { ok: host.run('mvn', ['-v']).ok },
    go: { ok: goOk, ...(go.ok && !goOk ? { found: go.output.trim() } : {}) },
    promtool: { ok: host.run('promtool', ['--version']).ok },
    prometheus: { ok: host.run('prometheus', ['--version']).ok },
    chromium: { ok: host.exists(host.env.POIMEN_TEST_CHROMIUM ?? CHROMIUM_DEFAULT) },
    openssl: { ok: host.run('openssl', ['version']).ok },
    haproxy: { ok: HAPROXY_PATHS.some((p) => host.exists(p)) },
    // Debian keeps the server binaries off PATH, under /usr/lib/postgresql/<major>/bin (provisionCluster.ts).
    postgres: {
      ok: host
        .readdir('/usr/lib/postgresql')
        .some((v) => host.exists(path.join('/usr/lib/postgresql', v, 'bin', 'initdb'))),
    },
  };
}

/**
 * What the stack's cache (devstack/stack/provision.ts) already holds, whatever the versions: a fresh machine has
 * none, a developer's machine usually all, and then Maven and Go are not needed. A version bump that needs a
 * rebuild is caught by the provisioning's own one-line tool check.
 * @param {Host} host
 */
function detectCache(host) {
  const cacheDir = host.env.POIMEN_CACHE_DIR || path.join(os.homedir(), '.cache', 'poimen-relay');
  const kafka = host
    .readdir(path.join(cacheDir, 'kafka'))
    .some((v) => host.exists(path.join(cacheDir, 'kafka', v, '.complete')));
  const bins = host.readdir(path.join(cacheDir, 'bin'));
  const goBinaries = ['temporal-', 'tctl-'].every((p) => bins.some((b) => b.startsWith(p)));
  // The cluster profile's Go builds (devstack/stack/provisionCluster.ts): the server and the Web UI.
  const built = (/** @type {string} */ dir, /** @type {string} */ bin) =>
    host.readdir(path.join(cacheDir, dir)).some((v) => host.exists(path.join(cacheDir, dir, v, bin)));
  const clusterBinaries = built('temporal-server', 'temporal-server') && built('temporal-ui', 'ui-server');
  return { kafka, goBinaries, clusterBinaries };
}

/** @param {Host} host @param {'test' | 'cluster'} [mode] @returns {Facts} */
function detect(host, mode = 'test') {
  const tools = detectTools(host);
  const apt = host.run('apt-get', ['--version']).ok;
  /** @type {Facts} */
  const facts = {
    root: host.root,
    apt,
    aptGoVersion: null,
    arch: host.arch,
    tools,
    cached: detectCache(host),
    memoryCgroup: mode === 'cluster' ? 'ok' : host.memoryCgroup(),
    mode,
  };
  const goMissing = missingRequirements(facts).some((r) => r.name === 'go');
  return goMissing && apt ? { ...facts, aptGoVersion: aptGoVersion(host) } : facts;
}

/**
 * Makes and removes a memory cgroup the way test/support/memoryCgroup.ts does (v2 when the unified hierarchy
 * has the memory controller, else v1), so "ok" means the memory test can run.
 * @param {boolean} root
 * @returns {CgroupFact}
 */
function probeMemoryCgroup(root) {
  let v2 = false;
  try {
    v2 = fs.readFileSync('/sys/fs/cgroup/cgroup.controllers', 'utf8').split(/\s+/).includes('memory');
  } catch {
    // no unified hierarchy at the root: v1 or nothing
  }
  const parent = v2 ? '/sys/fs/cgroup' : '/sys/fs/cgroup/memory';
  if (!fs.existsSync(parent)) return 'absent';
  const dir = path.join(parent, `poimen-preflight-${process.pid}`);
  try {
    fs.mkdirSync(dir);
  } catch {
    return root ? 'absent' : 'denied';
  }
  try {
    fs.writeFileSync(path.join(dir, v2 ? 'memory.max' : 'memory.limit_in_bytes'), String(512 * 1024 * 1024));
    return 'ok';
  } catch {
    return root ? 'absent' : 'denied';
  } finally {
    fs.rmdirSync(dir);
  }
}

/** @returns {Host} */
function realHost() {
  const root = process.getuid?.() === 0;
  return {
    run: (cmd, args) => {
      const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 30_000 });
      return { ok: !r.error && r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}` };
    },
    exists: (file) => fs.existsSync(file),
    readdir: (dir) => {
      try {
        return fs.readdirSync(dir);
      } catch {
        return [];
      }
    },
    root,
    arch: process.arch,
    env: process.env,
    memoryCgroup: () => probeMemoryCgroup(root),
  };
}

const MODE = process.argv.includes('--cluster') ? 'cluster' : 'test';

/** @param {string} line */
function say(line) {
  process.stderr.write(`${MODE === 'cluster' ? 'npm run test:cluster' : 'npm test'}: ${line}\n`);
}

/**
 * Debian's postgresql package makes and starts a cluster of its own on 5432 when installed; the stack runs its
 * own private one, so the package is told not to (postgresql-common reads createcluster.d/*.conf).
 */
function noDefaultPostgresCluster() {
  const dir = '/etc/postgresql-common/createcluster.d';
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'poimen-relay.conf'), 'create_main_cluster = false\n');
}

/** apt-get with its own output shown: installs take minutes and should be seen to progress. */
function aptGet(/** @type {string[]} */ args) {
  const r = spawnSync('apt-get', args, {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  if (r.error || r.status !== 0) {
    throw new PreflightStop(
      `${MODE === 'cluster' ? 'npm run test:cluster' : 'npm test'}: apt-get ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`}; its output is above)`,
    );
  }
}

class PreflightStop extends Error {}

function main() {
  const started = Date.now();
  const host = realHost();
  let facts = detect(host, MODE);
  if (facts.root && facts.apt && facts.memoryCgroup === 'ok' && missingRequirements(facts).length > 0) {
    // A fresh machine's package lists are empty: refresh them before asking apt what it would install.
    say(`installing what is missing; apt-get update first`);
    aptGet(['update', '-q']);
    facts = { ...facts, aptGoVersion: aptGoVersion(host) };
  }
  let plan = planPreflight(facts);
  if (plan.install.length > 0) {
    say(`installing ${plan.install.join(' ')} with apt-get`);
    if (plan.install.includes('postgresql')) noDefaultPostgresCluster();
    aptGet(['install', '-y', '-q', ...plan.install]);
    facts = detect(host, MODE);
    plan = planPreflight(facts, { installTried: true });
  }
  if (plan.stop) throw new PreflightStop(plan.stop);
  say(
    `host tools${MODE === 'cluster' ? '' : ' and memory cgroup'} ready (${((Date.now() - started) / 1000).toFixed(1)} s)`,
  );
}

if (require.main === module) {
  try {
    main();
  } catch (err) {
    // A known stop is one line; anything else is a bug in this script and keeps its stack.
    if (!(err instanceof PreflightStop)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exitCode = 1;
  }
}

module.exports = { detect, probeMemoryCgroup };
