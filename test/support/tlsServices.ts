/**
 * Secured doubles of the real services for the transport-security suite, all real software:
 *   - certificates made with `openssl` in a temp folder: a test CA (server cert for 127.0.0.1, client cert)
 *     and an unrelated "other" CA with its own server and client certs;
 *   - a dedicated Kafka broker (the project's own stack code) with a PLAINTEXT listener for test tooling and a
 *     SASL_SSL listener (SCRAM-SHA-256/512 user made at format time) for the relay;
 *   - HAProxy terminating TLS in front of the Temporal frontend, requiring a client certificate of the test CA.
 *     HAProxy, not stunnel: Temporal's Rust core (tonic) refuses a TLS session without ALPN `h2`
 *     ("H2NotNegotiated"), and Debian's stunnel 5.68 cannot negotiate ALPN.
 * Everything is stopped by its own pid in `stop()`.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { loadStackConfig } from '../../devstack/config';
import { silentProgress } from '../../devstack/stack/progress';
import { ensureKafka } from '../../devstack/stack/provision';
import { type Service, kafkaService, stopDaemon } from '../../devstack/stack/services';
import { freePort } from './cli';
import { waitFor } from './wait';

export interface Certs {
  dir: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  otherCa: string;
  otherServerCert: string;
  otherServerKey: string;
  otherClientCert: string;
  otherClientKey: string;
}

function openssl(cwd: string, args: string[]): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

export function issue(dir: string, caName: string, name: string, cn: string, ext: string): void {
  openssl(dir, [
    'genpkey',
    '-algorithm',
    'EC',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-out',
    `${name}.key`,
  ]);
  openssl(dir, ['req', '-new', '-key', `${name}.key`, '-subj', `/CN=${cn}`, '-out', `${name}.csr`]);
  fs.writeFileSync(path.join(dir, `${name}.ext`), ext);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${caName}.pem`,
    '-CAkey',
    `${caName}.key`,
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
    '-out',
    `${name}.pem`,
  ]);
}

function makeCa(dir: string, name: string, cn: string): void {
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-subj',
    `/CN=${cn}`,
    '-days',
    '2',
    '-out',
    `${name}.pem`,
  ]);
}

const SERVER_EXT = 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n';
export const CLIENT_EXT = 'extendedKeyUsage=clientAuth\n';

export function generateCerts(dir: string): Certs {
  fs.mkdirSync(dir, { recursive: true });
  makeCa(dir, 'ca', 'poimen-relay test CA');
  issue(dir, 'ca', 'server', 'localhost', SERVER_EXT);
  issue(dir, 'ca', 'client', 'poimen-relay', CLIENT_EXT);
  makeCa(dir, 'other-ca', 'unrelated CA');
  issue(dir, 'other-ca', 'other-server', 'localhost', SERVER_EXT);
  issue(dir, 'other-ca', 'other-client', 'poimen-relay', CLIENT_EXT);
  const f = (n: string) => path.join(dir, n);
  return {
    dir,
    ca: f('ca.pem'),
    serverCert: f('server.pem'),
    serverKey: f('server.key'),
    clientCert: f('client.pem'),
    clientKey: f('client.key'),
    otherCa: f('other-ca.pem'),
    otherServerCert: f('other-server.pem'),
    otherServerKey: f('other-server.key'),
    otherClientCert: f('other-client.pem'),
    otherClientKey: f('other-client.key'),
  };
}

export interface SecureKafka {
  /** PLAINTEXT, for the test's own admin/producer/consumer. */
  plainBrokers: string;
  /** SASL_SSL, for the relay. */
  secureBrokers: string;
  username: string;
  password: string;
  stop(): Promise<void>;
}

/** A dedicated broker from the cached Kafka jars, formatted with a SCRAM user, in `dir`. */
export async function startSecureKafka(dir: string, certs: Certs): Promise<SecureKafka> {
  const ports = new Set<number>();
  while (ports.size < 3) ports.add(await freePort());
  const [plainPort, controllerPort, securePort] = [...ports] as [number, number, number];
  const cfg = loadStackConfig({
    ...process.env,
    POIMEN_STATE_DIR: dir,
    POIMEN_STACK_KAFKA_PORT: String(plainPort),
    POIMEN_STACK_KAFKA_CONTROLLER_PORT: String(controllerPort),
  });
  await ensureKafka(cfg, silentProgress);
  // Kafka's PEM key store: the certificate chain and the unencrypted PKCS#8 key in one file.
  const keystore = path.join(certs.dir, 'kafka-keystore.pem');
  fs.writeFileSync(
    keystore,
    fs.readFileSync(certs.serverCert, 'utf8') + fs.readFileSync(certs.serverKey, 'utf8'),
  );
  const username = 'relay';
  const password = crypto.randomBytes(12).toString('hex');
  const scram = 'org.apache.kafka.common.security.scram.ScramLoginModule required;';
  const service: Service = kafkaService(cfg, {
    name: 'SECURE',
    port: securePort,
    protocol: 'SASL_SSL',
    properties: [
      'sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512',
      `listener.name.secure.scram-sha-256.sasl.jaas.config=${scram}`,
      `listener.name.secure.scram-sha-512.sasl.jaas.config=${scram}`,
      'listener.name.secure.ssl.keystore.type=PEM',
      `listener.name.secure.ssl.keystore.location=${keystore}`,
    ],
    formatArgs: [
      '--add-scram',
      `SCRAM-SHA-256=[name=${username},password=${password}]`,
      '--add-scram',
      `SCRAM-SHA-512=[name=${username},password=${password}]`,
    ],
  });
  await service.start();
  try {
    await waitFor(() => service.isReady(), { timeoutMs: 120_000, intervalMs: 250, what: 'TLS Kafka broker' });
  } catch (err) {
    await stopDaemon(service.pidFile);
    const tail = fs.existsSync(service.logFile) ? fs.readFileSync(service.logFile, 'utf8').slice(-3000) : '';
    throw new Error(`${(err as Error).message}; log ${service.logFile}:\n${tail}`, { cause: err });
  }
  return {
    plainBrokers: `127.0.0.1:${plainPort}`,
    secureBrokers: `127.0.0.1:${securePort}`,
    username,
    password,
    stop: async () => {
      await stopDaemon(service.pidFile);
    },
  };
}

export interface TlsProxy {
  address: string;
  stop(): Promise<void>;
}

/** HAProxy terminating TLS (client certificate of `certs.ca` required, ALPN h2) in front of `target`. */
export async function startTlsProxy(dir: string, certs: Certs, target: string): Promise<TlsProxy> {
  const port = await freePort();
  const combined = path.join(certs.dir, 'proxy-server.pem');
  fs.writeFileSync(
    combined,
    fs.readFileSync(certs.serverCert, 'utf8') + fs.readFileSync(certs.serverKey, 'utf8'),
  );
  const cfgFile = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(
    cfgFile,
    [
      'global',
      '  log stderr format raw local0 info',
      'defaults',
      '  mode tcp',
      '  log global',
      '  option tcplog',
      '  timeout connect 5s',
      '  timeout client 1h',
      '  timeout server 1h',
      'frontend temporal_tls',
      `  bind 127.0.0.1:${port} ssl crt ${combined} ca-file ${certs.ca} verify required alpn h2`,
      '  default_backend temporal',
      'backend temporal',
      `  server frontend ${target}`,
      '',
    ].join('\n'),
  );
  const logFile = path.join(dir, 'haproxy.log');
  const out = fs.openSync(logFile, 'a');
  // -db: stay in the foreground, so the child's pid is the proxy's and `stop()` signals exactly it.
  const child: ChildProcess = spawn(haproxyPath(), ['-db', '-f', cfgFile], { stdio: ['ignore', out, out] });
  fs.closeSync(out);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let gone = false;
  void exited.then(() => (gone = true));
  try {
    await waitFor(
      () =>
        gone
          ? Promise.reject(new Error(`haproxy exited: ${fs.readFileSync(logFile, 'utf8').slice(-2000)}`))
          : new Promise<boolean>((resolve) => {
              const s = net.connect({ host: '127.0.0.1', port }, () => {
                s.destroy();
                resolve(true);
              });
              s.once('error', () => resolve(false));
            }),
      { timeoutMs: 20_000, what: 'haproxy to listen' },
    );
  } catch (err) {
    // A proxy that never listened would otherwise outlive the test run, holding its port.
    if (!gone && child.pid !== undefined) {
      process.kill(child.pid, 'SIGKILL');
      await exited;
    }
    throw err;
  }
  return {
    address: `127.0.0.1:${port}`,
    stop: async () => {
      if (!gone && child.pid !== undefined) process.kill(child.pid, 'SIGTERM');
      await exited;
    },
  };
}

function haproxyPath(): string {
  for (const p of ['/usr/sbin/haproxy', '/usr/bin/haproxy']) if (fs.existsSync(p)) return p;
  throw new Error('haproxy is not installed: apt-get install -y haproxy (.ci/run installs it)');
}

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}
