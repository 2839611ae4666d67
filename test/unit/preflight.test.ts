/* eslint-disable max-lines -- one case per host the preflight plan must describe */
/**
 * `npm test`'s preflight (scripts/preflight.js): from what a machine has, which Debian packages it installs as
 * root, or the one line it stops with. The machine is described, not probed, so every case runs here; one
 * case runs the real script on a PATH without the tools to show it stops within seconds with one line.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { detect, probeMemoryCgroup } from '../../scripts/preflight';
import { type Facts, type ToolName, planPreflight } from '../../scripts/preflightPlan';

const ALL_TOOLS: ToolName[] = [
  'jdk',
  'mvn',
  'go',
  'promtool',
  'prometheus',
  'chromium',
  'openssl',
  'haproxy',
  'postgres',
];

/** A root Debian machine with everything: the tests name only what differs from it. */
function machine(over: Partial<Omit<Facts, 'tools'>> & { missing?: ToolName[] } = {}): Facts {
  const { missing = [], ...rest } = over;
  const tools = Object.fromEntries(ALL_TOOLS.map((t) => [t, { ok: !missing.includes(t) }])) as Facts['tools'];
  return {
    root: true,
    apt: true,
    aptGoVersion: null,
    arch: 'x64',
    tools,
    cached: { kafka: false, goBinaries: false },
    memoryCgroup: 'ok',
    ...rest,
  };
}

const MEMORY = 'test/it_worker_memory.test.ts runs the worker in a memory cgroup';

describe('what the preflight does on a given machine', () => {
  test("npm test never asks for PostgreSQL; npm run test:cluster asks only for the cluster profile's tools", () => {
    expect(planPreflight(machine({ missing: ['postgres'] }))).toEqual({ install: [], stop: null });
    const cluster = machine({
      mode: 'cluster',
      missing: ['postgres', 'chromium', 'haproxy', 'promtool', 'openssl'],
      memoryCgroup: 'denied',
      root: false,
      cached: { kafka: true, goBinaries: true, clusterBinaries: false },
    });
    expect(planPreflight(cluster).stop).toBe(
      'npm run test:cluster: PostgreSQL missing. Run: sudo apt-get install -y postgresql && npm run test:cluster',
    );
    expect(planPreflight({ ...cluster, root: true }).install).toEqual(['postgresql']);
    // Go only when the server or the Web UI is not built yet; a dev cache does not make it needless.
    expect(
      planPreflight(
        machine({
          mode: 'cluster',
          missing: ['go'],
          aptGoVersion: '1.24',
          cached: { kafka: true, goBinaries: true },
        }),
      ).install,
    ).toEqual(['golang-go']);
  });

  test('everything there: nothing to install, no stop', () => {
    expect(planPreflight(machine())).toEqual({ install: [], stop: null });
  });

  test("the reviewer's machine as root (no Chromium, HAProxy, promtool): installs exactly those packages", () => {
    expect(planPreflight(machine({ missing: ['chromium', 'haproxy', 'promtool'] }))).toEqual({
      install: ['prometheus', 'chromium', 'haproxy'],
      stop: null,
    });
  });

  test('the Prometheus server (the live alerts test) comes from the package that has promtool: named once', () => {
    expect(planPreflight(machine({ missing: ['prometheus'] }))).toEqual({
      install: ['prometheus'],
      stop: null,
    });
    expect(planPreflight(machine({ missing: ['promtool', 'prometheus'] })).install).toEqual(['prometheus']);
    expect(
      planPreflight(machine({ root: false, memoryCgroup: 'denied', missing: ['prometheus'] })).stop,
    ).toBe(
      `npm test: Prometheus missing, and it must run as root: ${MEMORY}. ` +
        'Run: sudo apt-get install -y prometheus && sudo env "PATH=$PATH" npm test',
    );
    expect(planPreflight(machine({ mode: 'cluster', missing: ['prometheus'] }))).toEqual({
      install: [],
      stop: null,
    });
  });

  test('a fresh root Debian 13 (apt has Go 1.24): installs the stack tools and the test tools in one apt-get', () => {
    expect(planPreflight(machine({ missing: ALL_TOOLS, aptGoVersion: '1.24' }))).toEqual({
      install: [
        'openjdk-17-jdk-headless',
        'maven',
        'golang-go',
        'prometheus',
        'chromium',
        'openssl',
        'haproxy',
      ],
      stop: null,
    });
  });

  test("a fresh root Debian 12 (apt's Go is 1.19): installs the rest, then stops with the official Go tarball", () => {
    const fresh = machine({ missing: ALL_TOOLS, aptGoVersion: '1.19' });
    expect(planPreflight(fresh).install).not.toContain('golang-go');
    expect(planPreflight(fresh).stop).toBeNull();
    const afterApt = machine({ missing: ['go'], aptGoVersion: '1.19' });
    expect(planPreflight(afterApt, { installTried: true })).toEqual({
      install: [],
      stop:
        "npm test: Go ≥ 1.21 missing (apt's golang-go is 1.19, too old to build the stack). Run: " +
        'curl -fsSL https://go.dev/dl/go1.25.0.linux-amd64.tar.gz | tar -C /usr/local -xz && ' +
        'export PATH=/usr/local/go/bin:$PATH && npm test',
    });
  });

  test('a stack already in the cache needs neither Maven nor Go', () => {
    const cached = machine({ missing: ['mvn', 'go'], cached: { kafka: true, goBinaries: true } });
    expect(planPreflight(cached)).toEqual({ install: [], stop: null });
  });

  test('not root: one line with the apt-get command and `sudo npm test`, because the memory test needs root', () => {
    const user = machine({
      root: false,
      memoryCgroup: 'denied',
      missing: ['chromium', 'haproxy', 'promtool'],
    });
    expect(planPreflight(user)).toEqual({
      install: [],
      stop:
        `npm test: promtool, Chromium, HAProxy missing, and it must run as root: ${MEMORY}. ` +
        'Run: sudo apt-get install -y prometheus chromium haproxy && sudo env "PATH=$PATH" npm test',
    });
  });

  test('not root with every tool: still one line, since the memory test cannot run', () => {
    expect(planPreflight(machine({ root: false, memoryCgroup: 'denied' })).stop).toBe(
      `npm test: it must run as root: ${MEMORY}. Run: sudo env "PATH=$PATH" npm test`,
    );
  });

  test('root without a usable memory cgroup (an unprivileged container): stops before installing anything', () => {
    const plan = planPreflight(machine({ memoryCgroup: 'absent', missing: ['chromium'] }));
    expect(plan.install).toEqual([]);
    expect(plan.stop).toMatch(
      new RegExp(`^npm test: ${MEMORY}, and none can be made here .*privileged container$`),
    );
  });

  test('no apt-get: names the tools and their Debian packages', () => {
    expect(planPreflight(machine({ apt: false, missing: ['haproxy', 'openssl'] })).stop).toBe(
      'npm test: openssl, HAProxy missing and no apt-get to install them. Install them with your package ' +
        'manager (the Debian/Ubuntu packages: openssl haproxy), then run: npm test',
    );
  });

  test('no apt-get and not root: the same line says it must run as root', () => {
    const user = machine({ apt: false, root: false, memoryCgroup: 'denied', missing: ['openssl'] });
    expect(planPreflight(user).stop).toBe(
      `npm test: openssl missing and no apt-get to install it, and it must run as root: ${MEMORY}. ` +
        'Install it with your package manager (the Debian/Ubuntu packages: openssl), then run: ' +
        'sudo env "PATH=$PATH" npm test',
    );
  });

  test('a tool apt-get did not make usable stops the second round instead of installing again', () => {
    const java11 = machine({ missing: ['jdk'] });
    java11.tools.jdk = { ok: false, found: 'java 11' };
    expect(planPreflight(java11).install).toEqual(['openjdk-17-jdk-headless']);
    expect(planPreflight(java11, { installTried: true })).toEqual({
      install: [],
      stop: 'npm test: apt-get ran, yet Java 17 (JDK) (found java 11) is still not usable: fix that and run npm test again',
    });
  });
});

describe('what the preflight finds on a machine', () => {
  type Run = { ok: boolean; output: string };
  const outputs: Record<string, Run> = {
    java: { ok: true, output: 'openjdk version "17.0.18" 2026-01-20\nOpenJDK Runtime Environment' },
    javac: { ok: true, output: 'javac 17.0.18' },
    mvn: { ok: true, output: 'Apache Maven 3.8.7' },
    go: { ok: true, output: 'go1.26.8\n' },
    promtool: { ok: true, output: 'promtool, version 2.42.0' },
    prometheus: { ok: true, output: 'prometheus, version 2.42.0+ds' },
    openssl: { ok: true, output: 'OpenSSL 3.0.17' },
    'apt-get': { ok: true, output: 'apt 2.6.1' },
    'apt-cache': { ok: true, output: 'golang-go:\n  Installed: (none)\n  Candidate: 2:1.19~1\n' },
  };
  const host = (
    over: Record<string, Run> = {},
    files: string[] = [
      '/usr/bin/chromium',
      '/usr/sbin/haproxy',
      '/usr/lib/postgresql/15',
      '/usr/lib/postgresql/15/bin/initdb',
    ],
  ) => ({
    run: (cmd: string) => over[cmd] ?? outputs[cmd] ?? { ok: false, output: `${cmd}: not found` },
    exists: (file: string) => files.includes(file),
    readdir: (dir: string) => files.filter((f) => path.dirname(f) === dir).map((f) => path.basename(f)),
    root: true,
    arch: 'x64',
    env: { POIMEN_CACHE_DIR: '/cache' },
    memoryCgroup: () => 'ok' as const,
  });

  test('every tool there, versions good enough', () => {
    const facts = detect(host());
    expect(Object.entries(facts.tools).filter(([, t]) => !t.ok)).toEqual([]);
    expect(facts.aptGoVersion).toBeNull();
  });

  test('Java 11, a JRE without javac, Go 1.19: each named with what was found', () => {
    const old = detect(
      host({ java: { ok: true, output: 'openjdk version "11.0.2"' }, go: { ok: true, output: 'go1.19.8' } }),
    );
    expect(old.tools.jdk).toEqual({ ok: false, found: 'java 11' });
    expect(old.tools.go).toEqual({ ok: false, found: 'go1.19.8' });
    expect(old.aptGoVersion).toBe('1.19');
    expect(detect(host({ javac: { ok: false, output: '' } })).tools.jdk).toEqual({
      ok: false,
      found: 'a JRE without javac',
    });
  });

  test('Chromium and HAProxy at the paths the suites use; POIMEN_TEST_CHROMIUM honoured', () => {
    const none = detect(host({}, []));
    expect([none.tools.chromium.ok, none.tools.haproxy.ok]).toEqual([false, false]);
    const elsewhere = {
      ...host({}, ['/opt/chrome/chrome', '/usr/bin/haproxy']),
      env: { POIMEN_TEST_CHROMIUM: '/opt/chrome/chrome' },
    };
    const found = detect(elsewhere);
    expect([found.tools.chromium.ok, found.tools.haproxy.ok]).toEqual([true, true]);
  });

  test("the stack's cache: Kafka needs a completed download, Go both binaries; the cluster's builds apart", () => {
    const partial = detect(host({}, ['/cache/kafka/4.1.1', '/cache/bin/temporal-v1.5.1']));
    expect(partial.cached).toEqual({ kafka: false, goBinaries: false, clusterBinaries: false });
    const devOnly = [
      '/cache/kafka/4.1.1',
      '/cache/kafka/4.1.1/.complete',
      '/cache/bin/temporal-v1.5.1',
      '/cache/bin/tctl-v1.18.0',
    ];
    expect(detect(host({}, devOnly)).cached).toEqual({
      kafka: true,
      goBinaries: true,
      clusterBinaries: false,
    });
    const full = detect(
      host({}, [
        ...devOnly,
        '/cache/temporal-server/v1.29.1',
        '/cache/temporal-server/v1.29.1/temporal-server',
        '/cache/temporal-ui/v2.42.1',
        '/cache/temporal-ui/v2.42.1/ui-server',
      ]),
    );
    expect(full.cached).toEqual({ kafka: true, goBinaries: true, clusterBinaries: true });
  });

  test('PostgreSQL: found by its server binaries under /usr/lib/postgresql/<major>/bin, off PATH', () => {
    expect(detect(host({}, [])).tools.postgres.ok).toBe(false);
    expect(
      detect(host({}, ['/usr/lib/postgresql/16', '/usr/lib/postgresql/16/bin/initdb'])).tools.postgres.ok,
    ).toBe(true);
  });
});

describe('the real script on a fresh machine', () => {
  test('with no tools on PATH it stops within seconds with one line and no stack trace', () => {
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-preflight-path-'));
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-preflight-cache-'));
    fs.symlinkSync(process.execPath, path.join(bin, 'node'));
    try {
      const started = Date.now();
      const r = spawnSync(path.join(bin, 'node'), [path.join(__dirname, '../../scripts/preflight.js')], {
        encoding: 'utf8',
        timeout: 30_000,
        env: {
          PATH: bin,
          HOME: os.homedir(),
          POIMEN_CACHE_DIR: cache,
          POIMEN_TEST_CHROMIUM: path.join(bin, 'chromium'),
        },
      });
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(r.status).toBe(1);
      expect(r.stdout).toBe('');
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      // Root with a memory cgroup (CI here): no apt-get on this PATH, so it names the tools and packages.
      const root = process.getuid?.() === 0;
      const cgroup = probeMemoryCgroup(root);
      if (root && cgroup === 'ok') {
        expect(lines[0]).toMatch(
          /^npm test: Java 17 \(JDK\), Maven, Go ≥ 1\.21, promtool, Prometheus, Chromium, openssl(, HAProxy)? missing and no apt-get .*\(the Debian\/Ubuntu packages: openjdk-17-jdk-headless maven prometheus chromium openssl( haproxy)?\), then run: curl -fsSL https:\/\/go\.dev\/dl\/go1\.25\.0\.linux-\w+\.tar\.gz \| tar -C \/usr\/local -xz && export PATH=\/usr\/local\/go\/bin:\$PATH && npm test$/,
        );
      } else {
        expect(lines[0]).toMatch(/^npm test: .*memory cgroup/);
      }
    } finally {
      fs.rmSync(bin, { recursive: true, force: true });
      fs.rmSync(cache, { recursive: true, force: true });
    }
  });
});
