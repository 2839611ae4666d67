// @ts-check
/**
 * What `npm test` needs from the host and what to do when something is missing: install it with apt-get (as
 * root on Debian/Ubuntu) or stop with one line naming the exact command. Pure: the facts come from the probes
 * in scripts/preflight.js, so test/unit/preflight.test.ts can describe any machine.
 *
 * Plain JavaScript on purpose: it runs before the build, so it cannot need one.
 */
'use strict';

/** Go ≥ 1.21 fetches the toolchain a module asks for (the temporal CLI asks for 1.25) from the module proxy. */
const MIN_GO = [1, 21];
/** What the one line offers when apt has no Go new enough (Debian 12's golang-go is 1.19). */
const GO_TARBALL_VERSION = '1.25.0';

/**
 * @typedef {'jdk' | 'mvn' | 'go' | 'promtool' | 'prometheus' | 'chromium' | 'openssl' | 'haproxy' | 'postgres'} ToolName
 * @typedef {{ ok: boolean, found?: string }} ToolFact  `found`: what is there when it is not usable, e.g. "java 11"
 * @typedef {'ok' | 'denied' | 'absent'} CgroupFact  denied: not root; absent: no memory controller to use
 * @typedef {{
 *   root: boolean,
 *   apt: boolean,
 *   aptGoVersion: string | null,
 *   arch: string,
 *   tools: Record<ToolName, ToolFact>,
 *   cached: { kafka: boolean, goBinaries: boolean, clusterBinaries?: boolean },
 *   memoryCgroup: CgroupFact,
 *   mode?: 'test' | 'cluster',
 * }} Facts
 * `mode`: what is checked for, `npm test` (default) or `npm run test:cluster` (the cluster profile: no browser,
 * alert or TLS tools, no memory cgroup; PostgreSQL and the Temporal server instead).
 * `aptGoVersion`: the version apt would install as golang-go (null when unknown or none);
 * `cached`: the stack's cache already holds the Kafka jars / the Go-built binaries, so Maven / Go are not needed.
 * @typedef {{ install: string[], stop: string | null }} Plan
 * `install`: Debian packages to install now with apt-get; `stop`: the one line to end with (exit 1).
 * @typedef {{ name: ToolName, label: string, apt: string, needed: (f: Facts) => boolean }} Requirement
 */

/** @type {Requirement[]} */
const REQUIREMENTS = [
  // Kafka runs on it and the codec test's producer is a Java source file (the JDK's launcher compiles it).
  { name: 'jdk', label: 'Java 17 (JDK)', apt: 'openjdk-17-jdk-headless', needed: () => true },
  { name: 'mvn', label: 'Maven', apt: 'maven', needed: (f) => !f.cached.kafka },
  {
    name: 'go',
    label: 'Go ≥ 1.21',
    apt: 'golang-go',
    needed: (f) => (isCluster(f) ? !f.cached.clusterBinaries : !f.cached.goBinaries),
  },
  // From apt, not built from the Go module proxy: apt is needed anyway (Chromium, HAProxy), the package is
  // prebuilt (a promtool build is minutes of compiling the Prometheus tree), and the alert tests were verified
  // against Debian's promtool.
  { name: 'promtool', label: 'promtool', apt: 'prometheus', needed: (f) => !isCluster(f) },
  // The server itself, from the same package: test/it_live_alerts.test.ts runs it against the relay's processes
  // and waits for the shipped alerts to fire.
  { name: 'prometheus', label: 'Prometheus', apt: 'prometheus', needed: (f) => !isCluster(f) },
  // Drives the Temporal Web UI check.
  { name: 'chromium', label: 'Chromium', apt: 'chromium', needed: (f) => !isCluster(f) },
  // The transport-security suite makes its certificates with openssl and terminates Temporal mTLS with HAProxy
  // (not stunnel: Debian's stunnel cannot negotiate ALPN h2, which the worker's Rust core requires).
  { name: 'openssl', label: 'openssl', apt: 'openssl', needed: (f) => !isCluster(f) },
  { name: 'haproxy', label: 'HAProxy', apt: 'haproxy', needed: (f) => !isCluster(f) },
  // The cluster profile's database (`npm run test:cluster` only): Debian's server binaries, run privately on their
  // own port; the preflight tells the package not to make its own cluster.
  { name: 'postgres', label: 'PostgreSQL', apt: 'postgresql', needed: isCluster },
];

const MEMORY_TEST = 'test/it_worker_memory.test.ts runs the worker in a memory cgroup';

/** @param {Facts} f */
function isCluster(f) {
  return f.mode === 'cluster';
}

/** @param {Facts} f */
function commandOf(f) {
  return isCluster(f) ? 'npm run test:cluster' : 'npm test';
}

/**
 * @param {string} version e.g. "1.19" or "go1.26.8"
 * @param {number[]} min
 */
function atLeast(version, min) {
  const m = /(\d+)\.(\d+)/.exec(version);
  if (!m) return false;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return major > (min[0] ?? 0) || (major === min[0] && minor >= (min[1] ?? 0));
}

/** @param {Facts} facts */
function missingRequirements(facts) {
  return REQUIREMENTS.filter((r) => r.needed(facts) && !facts.tools[r.name].ok);
}

/**
 * @param {Requirement[]} reqs
 * @param {Facts} facts
 */
function names(reqs, facts) {
  return reqs
    .map((r) => {
      const found = facts.tools[r.name].found;
      return found ? `${r.label} (found ${found})` : r.label;
    })
    .join(', ');
}

/**
 * @param {string} arch Node's process.arch
 * @param {string} sudo
 */
function goTarballCommand(arch, sudo) {
  const goArch = arch === 'x64' ? 'amd64' : arch;
  return (
    `curl -fsSL https://go.dev/dl/go${GO_TARBALL_VERSION}.linux-${goArch}.tar.gz | ${sudo}tar -C /usr/local -xz` +
    ` && export PATH=/usr/local/go/bin:$PATH`
  );
}

/**
 * Each package once: promtool and the Prometheus server both come from `prometheus`.
 * @param {Requirement[]} reqs
 */
function aptPackages(reqs) {
  return [...new Set(reqs.map((r) => r.apt))];
}

/**
 * @param {Facts} facts
 * @param {{ installTried?: boolean }} [options] installTried: apt-get already ran in this preflight
 * @returns {Plan}
 */
function planPreflight(facts, options = {}) {
  // A root run that cannot make a memory cgroup (an unprivileged container) cannot be fixed by installing.
  const memory = isCluster(facts) ? 'ok' : facts.memoryCgroup;
  if (memory === 'absent' || (memory === 'denied' && facts.root)) {
    return {
      install: [],
      stop:
        `npm test: ${MEMORY_TEST}, and none can be made here (neither v1 /sys/fs/cgroup/memory nor v2 ` +
        `/sys/fs/cgroup with the memory controller is writable, e.g. in an unprivileged container): ` +
        `run the tests on a host or in a privileged container`,
    };
  }
  const missing = missingRequirements(facts);
  const goFromApt = facts.aptGoVersion !== null && atLeast(facts.aptGoVersion, MIN_GO);
  const byApt = missing.filter((r) => r.name !== 'go' || goFromApt);
  const goByHand = missing.filter((r) => !byApt.includes(r));
  const needsRoot = memory === 'denied';
  if (missing.length === 0 && !needsRoot) return { install: [], stop: null };

  if (facts.root && facts.apt && !options.installTried && byApt.length > 0) {
    // Installed now; a Go that apt cannot provide is named afterwards, when the preflight plans again.
    return { install: aptPackages(byApt), stop: null };
  }

  const sudo = facts.root ? '' : 'sudo ';
  const them = byApt.length > 1 ? 'them' : 'it';
  if (options.installTried && byApt.length > 0) {
    return {
      install: [],
      stop: `${commandOf(facts)}: apt-get ran, yet ${names(byApt, facts)} ${byApt.length > 1 ? 'are' : 'is'} still not usable: fix that and run ${commandOf(facts)} again`,
    };
  }

  /** @type {string[]} */
  const problems = [];
  if (missing.length > 0) {
    const why =
      goByHand.length > 0 && facts.aptGoVersion !== null
        ? ` (apt's golang-go is ${facts.aptGoVersion}, too old to build the stack)`
        : '';
    const noApt = !facts.apt && byApt.length > 0 ? ` and no apt-get to install ${them}` : '';
    problems.push(`${names(missing, facts)} missing${why}${noApt}`);
  }
  if (needsRoot) problems.push(`it must run as root: ${MEMORY_TEST}`);

  const packages = aptPackages(byApt).join(' ');
  /** @type {string[]} */
  const commands = [];
  if (byApt.length > 0 && facts.apt) commands.push(`${sudo}apt-get install -y ${packages}`);
  if (goByHand.length > 0) commands.push(goTarballCommand(facts.arch, sudo));
  // sudo resets PATH: a Go in /usr/local/go/bin or an nvm-installed npm would not be found without it.
  commands.push(needsRoot ? `sudo env "PATH=$PATH" ${commandOf(facts)}` : commandOf(facts));
  const action =
    byApt.length > 0 && !facts.apt
      ? `Install ${them} with your package manager (the Debian/Ubuntu packages: ${packages}), then run: `
      : 'Run: ';
  return {
    install: [],
    stop: `${commandOf(facts)}: ${problems.join(', and ')}. ${action}${commands.join(' && ')}`,
  };
}

module.exports = { REQUIREMENTS, MIN_GO, atLeast, missingRequirements, planPreflight };
