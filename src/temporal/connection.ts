import fs from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';
import type { TemporalConfig } from '../config';
import { ConfigError } from '../errors';
import { handshakeFailure, tlsRefusal } from '../tlsErrors';

function tls(cfg: TemporalConfig): ConnectionOptions['tls'] {
  if (!cfg.tls) return cfg.apiKey ? true : undefined;
  return {
    ...(cfg.tls.caPath ? { serverRootCACertificate: fs.readFileSync(cfg.tls.caPath) } : {}),
    ...(cfg.tls.certPath && cfg.tls.keyPath
      ? { clientCertPair: { crt: fs.readFileSync(cfg.tls.certPath), key: fs.readFileSync(cfg.tls.keyPath) } }
      : {}),
  };
}

/**
 * A lazy client connection: it dials on first use and reconnects by itself, so a Temporal outage at start
 * or later shows up as failing calls (which the ingester retries), never as a crashed process.
 */
export function createClientConnection(cfg: TemporalConfig): Connection {
  const t = tls(cfg);
  return Connection.lazy({
    address: cfg.address,
    ...(t ? { tls: t } : {}),
    ...(cfg.apiKey ? { apiKey: cfg.apiKey } : {}),
  });
}

export function createNativeConnection(cfg: TemporalConfig): Promise<NativeConnection> {
  const t = tls(cfg) as NativeConnectionOptions['tls'];
  return NativeConnection.connect({
    address: cfg.address,
    ...(t ? { tls: t } : {}),
    ...(cfg.apiKey ? { apiKey: cfg.apiKey } : {}),
  });
}

/**
 * With TLS configured, one HTTP/2-over-TLS handshake with the frontend before the SDK dials: a certificate the
 * server refuses (or a CA that does not verify the server) becomes one ConfigError line naming the variables,
 * decided by the TLS error code. The SDKs would instead retry "unavailable" forever (client) or fail with a
 * transport error (worker). Anything that is not a TLS refusal (server down, timeout) returns quietly: the
 * callers' own waiting and retrying handle it as before. Sends no request, so no API key is needed or shown.
 */
export async function checkTemporalTls(cfg: TemporalConfig, timeoutMs = 10_000): Promise<void> {
  if (!cfg.tls && !cfg.apiKey) return;
  const [host, port] = splitAddress(cfg.address);
  const code = await new Promise<unknown>((resolve, reject) => {
    let socket: TLSSocket;
    try {
      // Our own TLS socket: a handshake alert surfaces as an error of the socket, not of the HTTP/2 session.
      socket = tlsConnect({
        host,
        port,
        ALPNProtocols: ['h2'],
        ...(cfg.tls?.caPath ? { ca: fs.readFileSync(cfg.tls.caPath) } : {}),
        ...(cfg.tls?.certPath && cfg.tls.keyPath
          ? { cert: fs.readFileSync(cfg.tls.certPath), key: fs.readFileSync(cfg.tls.keyPath) }
          : {}),
        // SNI only for names (an IP address as server name is not allowed by RFC 6066).
        ...(net.isIP(host) ? {} : { servername: host }),
      });
    } catch (err) {
      // Files that cannot be read or parsed (config checks them at start, but they may change since) throw
      // here, before any socket exists: one line naming the variables, not a stack trace.
      const errCode = err && typeof err === 'object' ? (err as { code?: unknown }).code : undefined;
      reject(
        new ConfigError(
          'TEMPORAL_TLS_CERT/TEMPORAL_TLS_KEY/TEMPORAL_TLS_CA',
          `cannot be loaded (${typeof errCode === 'string' ? errCode : 'unknown error'})`,
        ),
      );
      return;
    }
    const session = http2.connect(`https://${cfg.address}`, { createConnection: () => socket });
    const done = (value: unknown) => {
      clearTimeout(timer);
      session.destroy();
      socket.destroy();
      resolve(value);
    };
    // The server's SETTINGS frame arrives only over an accepted TLS session: the handshake passed both ways.
    session.once('remoteSettings', () => done(undefined));
    socket.on('error', (err: { code?: unknown }) => done(err.code));
    session.on('error', (err: { code?: unknown }) => done(err.code));
    const timer = setTimeout(() => done(undefined), timeoutMs);
  });
  // Undefined: not a TLS refusal (server down, timeout, a server's internal_error): the callers wait it out.
  const refusal = tlsRefusal(code);
  if (refusal === undefined) return;
  const where = `Temporal at ${cfg.address}`;
  const detail = String(code);
  if (refusal === 'untrusted-server') {
    throw new ConfigError(
      cfg.tls?.caPath ? 'TEMPORAL_TLS_CA' : 'TEMPORAL_TLS_CA (unset: system roots)',
      `does not verify the certificate of ${where} (${detail})`,
    );
  }
  if (refusal === 'refused-by-server') {
    throw new ConfigError(
      'TEMPORAL_TLS_CERT/TEMPORAL_TLS_KEY',
      cfg.tls?.certPath
        ? `were refused by ${where} (${detail})`
        : `are unset but ${where} requires a client certificate (${detail})`,
    );
  }
  // Not about certificates (a server that does not speak TLS, or refuses our TLS version or ALPN h2): name
  // what turned TLS on. An API key alone does, since Temporal Cloud takes it only over TLS.
  if (!cfg.tls) {
    throw new ConfigError(
      'TEMPORAL_API_KEY',
      `is set, which turns TLS on, but with ${where}: ${handshakeFailure(code)}`,
    );
  }
  throw new ConfigError('TEMPORAL_TLS_*', `do not fit ${where}: ${handshakeFailure(code)}`);
}

function splitAddress(address: string): [string, number] {
  const i = address.lastIndexOf(':');
  return [address.slice(0, i).replace(/^\[|\]$/g, ''), Number(address.slice(i + 1))];
}
