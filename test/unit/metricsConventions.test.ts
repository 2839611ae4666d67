/**
 * Prometheus conventions: each process exports `poimen_relay_build_info` (value 1; what runs where is read from
 * its labels), and the metrics server listens on IPv6 as well as IPv4.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { hasIpv6Loopback, httpGet } from '../support/http';
import { readBuildInfo } from '../../src/version';
import { createMetrics } from '../../src/metrics';
import { ObservabilityServer, listenOnAnyAddress } from '../../src/observability';
import { metricValue } from '../support/relay';

const root = path.resolve(__dirname, '..', '..');
const PACKAGE_VERSION = (
  JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }
).version;
// The commit the relay reports when run from this checkout (a copy without .git has none to tell).
const HEAD = fs.existsSync(path.join(root, '.git'))
  ? execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim()
  : 'unknown';

describe('poimen_relay_build_info', () => {
  it.each(['ingester', 'worker'] as const)(
    'is 1 with version, node version, commit and role %s',
    async (role) => {
      const metrics = createMetrics({ defaultMetrics: false, role });
      const text = await metrics.registry.metrics();
      expect(text).toContain('# TYPE poimen_relay_build_info gauge');
      expect(
        metricValue(text, 'poimen_relay_build_info', {
          version: PACKAGE_VERSION,
          node_version: process.version,
          commit: HEAD,
          role,
        }),
      ).toBe(1);
    },
  );

  describe('commit', () => {
    let dir: string;
    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-build-info-'));
    });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    it('is the one the build recorded in build-info.json beside package.json', () => {
      fs.writeFileSync(path.join(dir, 'build-info.json'), JSON.stringify({ commit: 'a'.repeat(40) }));
      expect(readBuildInfo(dir).commit).toBe('a'.repeat(40));
    });

    it("is the checkout's HEAD when the package runs from a git checkout", () => {
      const git = (...args: string[]) =>
        execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
          cwd: dir,
          encoding: 'utf8',
        });
      git('init', '-q');
      git('commit', '-q', '--allow-empty', '-m', 'first');
      expect(readBuildInfo(dir).commit).toBe(git('rev-parse', 'HEAD').trim());
      // A build's record wins over the checkout: it names what was built.
      fs.writeFileSync(path.join(dir, 'build-info.json'), JSON.stringify({ commit: 'b'.repeat(40) }));
      expect(readBuildInfo(dir).commit).toBe('b'.repeat(40));
    });

    it('is "unknown" when neither tells', () => {
      expect(readBuildInfo(dir)).toEqual({
        version: expect.any(String),
        nodeVersion: process.version,
        commit: 'unknown',
      });
    });
  });
});

describe('metrics server addresses', () => {
  const registry = createMetrics({ defaultMetrics: false, role: 'worker' }).registry;

  it('answers on 127.0.0.1, and on [::1] when the host has IPv6 loopback', async () => {
    const server = await ObservabilityServer.start(0, registry, { ready: () => true });
    try {
      const v4 = await httpGet('127.0.0.1', server.port, '/metrics');
      expect(v4.status).toBe(200);
      expect(v4.body).toContain('poimen_relay_build_info');
      if (await hasIpv6Loopback()) {
        const v6 = await httpGet('::1', server.port, '/metrics');
        expect(v6.status).toBe(200);
        expect(v6.body).toContain('poimen_relay_build_info');
        expect((await httpGet('::1', server.port, '/readyz')).status).toBe(200);
      } else {
        await expect(httpGet('::1', server.port, '/metrics')).rejects.toThrow();
      }
    } finally {
      await server.close();
    }
  });

  it('falls back to IPv4 when the IPv6 address cannot be bound (a host without IPv6)', async () => {
    const server = http.createServer((_req, res) => res.end('ok'));
    // 2001:db8::/32 is the documentation prefix: no interface has it, so binding it fails as `::` does without IPv6.
    await listenOnAnyAddress(server, 0, ['2001:db8::1', '0.0.0.0']);
    try {
      expect((server.address() as net.AddressInfo).address).toBe('0.0.0.0');
      const port = (server.address() as net.AddressInfo).port;
      expect((await httpGet('127.0.0.1', port, '/')).body).toBe('ok');
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('does not hide a port already in use behind the fallback', async () => {
    const taken = http.createServer();
    await new Promise<void>((r) => taken.listen(0, '::', r));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      await expect(ObservabilityServer.start(port, registry, { ready: () => true })).rejects.toMatchObject({
        code: 'EADDRINUSE',
      });
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });
});
