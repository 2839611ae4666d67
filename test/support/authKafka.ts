/**
 * A dedicated broker (the project's own stack code, the cached Kafka jars) whose second listener authenticates
 * clients by certificate: SSL with `ssl.client.auth=required`, trusting the test CA (PEM trust store), so a
 * client's principal is its certificate's subject (`User:CN=…`). The PLAINTEXT listener is the test's own tooling
 * (and the inter-broker and controller link); with `acls`, the broker runs StandardAuthorizer with nothing
 * allowed unless an ACL says so, and PLAINTEXT's `User:ANONYMOUS` is the super user that sets the ACLs up.
 * Stopped by its own pid in `stop()`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadStackConfig } from '../../devstack/config';
import { silentProgress } from '../../devstack/stack/progress';
import { ensureKafka } from '../../devstack/stack/provision';
import { type Service, kafkaService, stopDaemon } from '../../devstack/stack/services';
import { freePort } from './cli';
import type { Certs } from './tlsServices';
import { waitFor } from './wait';

export interface CertAuthKafka {
  /** PLAINTEXT: the test's admin, producer and consumer (a super user when `acls`). */
  plainBrokers: string;
  /** SSL with a client certificate required: the relay's. */
  secureBrokers: string;
  stop(): Promise<void>;
}

/** The principal Kafka's default SSL principal builder gives a client certificate of subject `CN=<cn>`. */
export function certPrincipal(cn: string): string {
  return `User:CN=${cn}`;
}

export async function startCertAuthKafka(
  dir: string,
  certs: Certs,
  opts: { acls?: boolean } = {},
): Promise<CertAuthKafka> {
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
  const keystore = path.join(certs.dir, 'kafka-mtls-keystore.pem');
  fs.writeFileSync(
    keystore,
    fs.readFileSync(certs.serverCert, 'utf8') + fs.readFileSync(certs.serverKey, 'utf8'),
  );
  const service: Service = kafkaService(
    cfg,
    {
      name: 'MTLS',
      port: securePort,
      protocol: 'SSL',
      properties: [
        'listener.name.mtls.ssl.keystore.type=PEM',
        `listener.name.mtls.ssl.keystore.location=${keystore}`,
        'listener.name.mtls.ssl.truststore.type=PEM',
        `listener.name.mtls.ssl.truststore.location=${certs.ca}`,
        'listener.name.mtls.ssl.client.auth=required',
      ],
    },
    // Later lines win: the dev profile's "open until an ACL names a resource" is turned off.
    opts.acls ? ['allow.everyone.if.no.acl.found=false', 'super.users=User:ANONYMOUS'] : [],
  );
  await service.start();
  try {
    await waitFor(() => service.isReady(), {
      timeoutMs: 120_000,
      intervalMs: 250,
      what: 'mTLS Kafka broker',
    });
  } catch (err) {
    await stopDaemon(service.pidFile);
    const tail = fs.existsSync(service.logFile) ? fs.readFileSync(service.logFile, 'utf8').slice(-3000) : '';
    throw new Error(`${(err as Error).message}; log ${service.logFile}:\n${tail}`, { cause: err });
  }
  return {
    plainBrokers: `127.0.0.1:${plainPort}`,
    secureBrokers: `127.0.0.1:${securePort}`,
    stop: async () => {
      await stopDaemon(service.pidFile);
    },
  };
}
