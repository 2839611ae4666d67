import fs from 'node:fs';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';
import type { TemporalConfig } from '../config';

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
