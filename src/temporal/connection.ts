import fs from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';
import type { TemporalConfig } from '../config';
import type { TemporalTls } from '../config/temporalEnv';
import { TEMPORAL } from '../config/vars/temporal';
import { ConfigError } from '../errors';
import type { Logger } from '../logger';
import { handshakeFailure, tlsRefusal } from '../tlsErrors';
import { apiKeyFile } from './apiKeyFile';

/** TLS files are read at each connect (a renewed certificate is used by the next process or reconnect). */
function material(t: TemporalTls | undefined): { ca?: Buffer; cert?: Buffer; key?: Buffer } {
  const read = (path?: string, pem?: string) =>
    path ? fs.readFileSync(path) : pem !== undefined ? Buffer.from(pem) : undefined;
  const ca = read(t?.caPath, t?.caPem);
  const cert = read(t?.certPath, t?.certPem);
  const key = read(t?.keyPath, t?.keyPem);
  return { ...(ca ? { ca } : {}), ...(cert && key ? { cert, key } : {}) };
}

/** TLS is on with any TLS setting or an API key (Temporal Cloud takes keys only over TLS), unless turned off. */
function usesTls(cfg: TemporalConfig): boolean {
  return !cfg.tlsDisabled && Boolean(cfg.tls || cfg.apiKey || cfg.apiKeyFile);
}

function tls(cfg: TemporalConfig): ConnectionOptions['tls'] {
  // Explicitly off: the SDK would otherwise turn TLS on for an API key.
  if (cfg.tlsDisabled) return false;
  if (!cfg.tls) return usesTls(cfg) ? true : undefined;
  const m = material(cfg.tls);
  return {
    ...(m.ca ? { serverRootCACertificate: m.ca } : {}),
    ...(m.cert && m.key ? { clientCertPair: { crt: m.cert, key: m.key } } : {}),
    ...(cfg.tls.serverName ? { serverNameOverride: cfg.tls.serverName } : {}),
  };
}

/** Address, TLS and gRPC metadata: what both kinds of connection take alike. */
function common(cfg: TemporalConfig) {
  const t = tls(cfg);
  return {
    address: cfg.address,
    ...(t !== undefined ? { tls: t } : {}),
    ...(cfg.grpcMeta ? { metadata: cfg.grpcMeta } : {}),
  };
}

/**
 * A lazy client connection: it dials on first use and reconnects by itself, so a Temporal outage at start
 * or later shows up as failing calls (which the ingester retries), never as a crashed process. With
 * TEMPORAL_API_KEY_FILE the key is asked for at each call, so a rotated key goes out with the next one.
 */
export function createClientConnection(cfg: TemporalConfig, log?: Logger): Connection {
  const keyFile = cfg.apiKeyFile ? apiKeyFile(cfg.apiKeyFile, log) : undefined;
  return Connection.lazy({
    ...common(cfg),
    ...(keyFile ? { apiKey: () => keyFile.current() } : cfg.apiKey ? { apiKey: cfg.apiKey } : {}),
  });
}

/** The worker's connection; with TEMPORAL_API_KEY_FILE a rotated key is handed to it (setApiKey) as it changes. */
export async function createNativeConnection(cfg: TemporalConfig, log?: Logger): Promise<NativeConnection> {
  const keyFile = cfg.apiKeyFile ? apiKeyFile(cfg.apiKeyFile, log) : undefined;
  const apiKey = keyFile?.current() ?? cfg.apiKey;
  const connection = await NativeConnection.connect({
    ...(common(cfg) as Pick<NativeConnectionOptions, 'address' | 'tls' | 'metadata'>),
    ...(apiKey ? { apiKey } : {}),
  });
  if (keyFile) {
    const use = (key: string) =>
      connection.setApiKey(key).then(
        () => log?.info('the worker connection sends the new Temporal API key'),
        (err: unknown) => log?.warn({ err }, 'could not hand the new API key to the worker connection'),
      );
    keyFile.onChange((key) => void use(key));
    // Rotated while the connection was being made.
    if (keyFile.current() !== apiKey) await use(keyFile.current());
  }
  return connection;
}

/**
 * With TLS configured, one HTTP/2-over-TLS handshake with the frontend before the SDK dials: a certificate the
 * server refuses (or a CA that does not verify the server) becomes one ConfigError line naming the variables,
 * decided by the TLS error code. The SDKs would instead retry "unavailable" forever (client) or fail with a
 * transport error (worker). Anything that is not a TLS refusal (server down, timeout) returns quietly: the
 * callers' own waiting and retrying handle it as before. Sends no request, so no API key is needed or shown.
 */
export async function checkTemporalTls(cfg: TemporalConfig, timeoutMs = 10_000): Promise<void> {
  if (!usesTls(cfg)) return;
  const [host, port] = splitAddress(cfg.address);
  const serverName = cfg.tls?.serverName ?? (net.isIP(host) ? undefined : host);
  const certVars =
    cfg.tls?.from?.cert ?? `${TEMPORAL.TEMPORAL_TLS_CERT.name}/${TEMPORAL.TEMPORAL_TLS_KEY.name}`;
  const caVar = cfg.tls?.from?.ca ?? TEMPORAL.TEMPORAL_TLS_CA.name;
  const code = await new Promise<unknown>((resolve, reject) => {
    let socket: TLSSocket;
    try {
      const m = material(cfg.tls);
      // Our own TLS socket: a handshake alert surfaces as an error of the socket, not of the HTTP/2 session.
      socket = tlsConnect({
        host,
        port,
        ALPNProtocols: ['h2'],
        ...(m.ca ? { ca: m.ca } : {}),
        ...(m.cert && m.key ? { cert: m.cert, key: m.key } : {}),
        // SNI, and the name the certificate is checked against: TEMPORAL_TLS_SERVER_NAME, else the host when
        // it is a name (an IP address as server name is not allowed by RFC 6066).
        ...(serverName ? { servername: serverName } : {}),
      });
    } catch (err) {
      // Files that cannot be read or parsed (config checks them at start, but they may change since) throw
      // here, before any socket exists: one line naming the variables, not a stack trace.
      const errCode = err && typeof err === 'object' ? (err as { code?: unknown }).code : undefined;
      reject(
        new ConfigError(
          `${certVars}/${caVar}`,
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
  // The certificate is trusted but names another server: the name it is checked against is what to fix.
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID' || code === 'HOSTNAME_MISMATCH') {
    throw new ConfigError(
      TEMPORAL.TEMPORAL_TLS_SERVER_NAME.name,
      cfg.tls?.serverName
        ? `= ${JSON.stringify(cfg.tls.serverName)}: is not a name in the certificate of ${where} (${detail})`
        : `is unset and the certificate of ${where} does not name ${host} (${detail})`,
    );
  }
  if (refusal === 'untrusted-server') {
    throw new ConfigError(
      cfg.tls?.caPath || cfg.tls?.caPem ? caVar : `${TEMPORAL.TEMPORAL_TLS_CA.name} (unset: system roots)`,
      `does not verify the certificate of ${where} (${detail})`,
    );
  }
  if (refusal === 'refused-by-server') {
    throw new ConfigError(
      certVars,
      cfg.tls?.certPath || cfg.tls?.certPem
        ? `were refused by ${where} (${detail})`
        : `are unset but ${where} requires a client certificate (${detail})`,
    );
  }
  // Not about certificates (a server that does not speak TLS, or refuses our TLS version or ALPN h2): name
  // what turned TLS on. An API key alone does, since Temporal Cloud takes it only over TLS.
  if (!cfg.tls) {
    throw new ConfigError(
      cfg.apiKeyFile ? TEMPORAL.TEMPORAL_API_KEY_FILE.name : TEMPORAL.TEMPORAL_API_KEY.name,
      `is set, which turns TLS on, but with ${where}: ${handshakeFailure(code)}`,
    );
  }
  throw new ConfigError('TEMPORAL_TLS_*', `do not fit ${where}: ${handshakeFailure(code)}`);
}

function splitAddress(address: string): [string, number] {
  const i = address.lastIndexOf(':');
  return [address.slice(0, i).replace(/^\[|\]$/g, ''), Number(address.slice(i + 1))];
}
