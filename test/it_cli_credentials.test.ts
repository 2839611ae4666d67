/**
 * The CLI's "credentials refused" class (exit 5, docs/cli.md#exit-codes): a Kafka that rejects the SASL
 * password and a Temporal that requires a client certificate the CLI does not offer. One line naming the
 * variables to fix and the service's address, no stack trace, no secret, within a few seconds. Real services:
 * a dedicated SASL_SSL broker and HAProxy (mTLS) in front of the dev server (test/support/tlsServices.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { type CliResult, runCli } from './support/cli';
import { uniqueTenant } from './support/names';
import { testServices } from './support/testEnv';
import {
  type Certs,
  type SecureKafka,
  type TlsProxy,
  generateCerts,
  startSecureKafka,
  startTlsProxy,
  tempDir,
} from './support/tlsServices';

jest.setTimeout(240_000);

/** The connect timeout (5 s) plus starting node on a loaded box; a refusal needs no waiting at all. */
const BOUND_MS = 10_000;

let dir: string;
let certs: Certs;
let kafka: SecureKafka;
let proxy: TlsProxy;

beforeAll(async () => {
  dir = tempDir('poimen-it-cli-cred-');
  certs = generateCerts(path.join(dir, 'certs'));
  kafka = await startSecureKafka(path.join(dir, 'kafka'), certs);
  proxy = await startTlsProxy(dir, certs, testServices().temporalAddress);
}, 300_000);

afterAll(async () => {
  await proxy?.stop();
  await kafka?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function timed(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult & { ms: number }> {
  const t0 = Date.now();
  const res = await runCli(args, { ...process.env, ...env }, 120_000);
  return { ...res, ms: Date.now() - t0 };
}

function expectRefused(res: CliResult & { ms: number }, pattern: RegExp, secret?: string): void {
  const lines = res.stderr.split('\n').filter((l) => l.trim() !== '');
  expect({ code: res.code, lines }).toEqual({ code: 5, lines: [expect.stringMatching(pattern)] });
  expect(lines[0]).toMatch(/^poimen-relay: /);
  expect(res.stderr).not.toMatch(/\n\s+at /);
  if (secret) expect(res.stdout + res.stderr).not.toContain(secret);
  expect(res.ms).toBeLessThan(BOUND_MS);
}

test('Kafka rejects the SASL password: topics and dlq commands exit 5 with one line naming the variables', async () => {
  const wrong = 'not-the-password';
  const env = {
    KAFKA_BROKERS: kafka.secureBrokers,
    KAFKA_SSL: 'true',
    KAFKA_SSL_CA: certs.ca,
    KAFKA_SASL_MECHANISM: 'scram-sha-256',
    KAFKA_SASL_USERNAME: kafka.username,
    KAFKA_SASL_PASSWORD: wrong,
  };
  const tenant = uniqueTenant();
  for (const args of [
    ['topics', 'list'],
    ['topics', 'apply', '--tenant', tenant],
    ['dlq', 'list', '--tenant', tenant],
  ]) {
    expectRefused(
      await timed(args, env),
      new RegExp(`KAFKA_SASL_USERNAME/KAFKA_SASL_PASSWORD were rejected by Kafka at ${kafka.secureBrokers}`),
      wrong,
    );
  }
  // The right password through the same path works: the refusal was about the credentials.
  const ok = await timed(['topics', 'list'], { ...env, KAFKA_SASL_PASSWORD: kafka.password });
  expect(ok.code).toBe(0);
});

test('Temporal requires a client certificate the CLI does not offer: exit 5, one line naming the variables', async () => {
  const env = { TEMPORAL_ADDRESS: proxy.address, TEMPORAL_TLS_CA: certs.ca };
  for (const args of [
    ['temporal', 'setup'],
    ['dispatch', 'status', '--tenant', 'acme', '--key', 'k-1'],
  ]) {
    expectRefused(
      await timed(args, env),
      /TEMPORAL_TLS_CERT\/TEMPORAL_TLS_KEY are unset but Temporal at .* requires a client certificate/,
    );
  }
  const ok = await timed(['dispatch', 'status', '--tenant', 'acme', '--key', 'k-1'], {
    ...env,
    TEMPORAL_TLS_CERT: certs.clientCert,
    TEMPORAL_TLS_KEY: certs.clientKey,
  });
  expect(ok.code).toBe(1);
  expect(ok.stdout).toMatch(/no execution/);
});
