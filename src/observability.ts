/**
 * GET /metrics (Prometheus text), /healthz (the process is alive and its loop turns) and /readyz (it can do
 * its work now: connected, consuming or polling). Served by node:http; three routes need no framework.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface Probe {
  ready(): boolean | Promise<boolean>;
  /** One line on why the process is not ready, for operators reading /readyz. */
  detail?(): string;
}

/**
 * Every interface, IPv6 included: Node binds `::` dual-stack (its `ipv6Only` defaults to false and is set on the
 * socket, whatever the host's bindv6only), so IPv4 scrapers reach it too. A host without IPv6 refuses `::` (EAFNOSUPPORT, or EADDRNOTAVAIL when it is
 * disabled); then IPv4 alone. Any other error (a port in use) is the caller's to see.
 */
const ANY_ADDRESSES = ['::', '0.0.0.0'];
const NO_SUCH_ADDRESS = new Set(['EAFNOSUPPORT', 'EADDRNOTAVAIL']);

export async function listenOnAnyAddress(
  server: http.Server,
  port: number,
  addresses: readonly string[] = ANY_ADDRESSES,
): Promise<void> {
  for (const [i, host] of addresses.entries()) {
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (i === addresses.length - 1 || !code || !NO_SUCH_ADDRESS.has(code)) throw err;
    }
  }
}

export class ObservabilityServer {
  private closed = false;

  private constructor(private readonly server: http.Server) {}

  static async start(port: number, registry: Registry, probe: Probe): Promise<ObservabilityServer> {
    const server = http.createServer((req, res) => {
      void (async () => {
        try {
          if (req.url === '/metrics') {
            res.writeHead(200, { 'content-type': registry.contentType });
            res.end(await registry.metrics());
          } else if (req.url === '/healthz') {
            res.writeHead(200, { 'content-type': 'text/plain' });
            res.end('ok\n');
          } else if (req.url === '/readyz') {
            const ready = await probe.ready();
            res.writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' });
            const detail = ready ? undefined : probe.detail?.();
            res.end(ready ? 'ready\n' : `not ready${detail ? `: ${detail}` : ''}\n`);
          } else {
            res.writeHead(404).end();
          }
        } catch (err) {
          res.writeHead(500).end(err instanceof Error ? err.message : 'error');
        }
      })();
    });
    await listenOnAnyAddress(server, port);
    return new ObservabilityServer(server);
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
