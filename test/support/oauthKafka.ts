/**
 * A dedicated broker (the project's own stack code, the cached Kafka jars) whose second listener authenticates
 * clients by SASL/OAUTHBEARER as managed Kafka services do: KIP-768's OAuthBearerValidatorCallbackHandler with
 * the BrokerJwtValidator checks each token's RS256 signature against the keys the test token server serves
 * (oauthServer.ts, /jwks), its expiry, issuer and audience; the principal is the token's `sub`. Kafka fetches only URLs its JVM allows
 * (`org.apache.kafka.sasl.oauthbearer.allowed.urls`), so the JWKS URL is allowed there. The PLAINTEXT listener is
 * the test's own tooling (and the inter-broker and controller link). Re-authentication is required every
 * `reauthMs`, so a long-lived connection presents a fresh token. Stopped by its own pid in `stop()`.
 */
import fs from 'node:fs';
import { loadStackConfig } from '../../devstack/config';
import { silentProgress } from '../../devstack/stack/progress';
import { ensureKafka } from '../../devstack/stack/provision';
import { type Service, kafkaService, stopDaemon } from '../../devstack/stack/services';
import { freePort } from './cli';
import type { OAuthServer } from './oauthServer';
import { waitFor } from './wait';

export interface OAuthKafka {
  /** PLAINTEXT: the test's admin, producer and consumer. */
  plainBrokers: string;
  /** SASL_PLAINTEXT with OAUTHBEARER: the relay's. */
  oauthBrokers: string;
  stop(): Promise<void>;
}

export async function startOAuthKafka(
  dir: string,
  tokens: OAuthServer,
  opts: { issuer: string; audience: string; reauthMs: number },
): Promise<OAuthKafka> {
  const ports = new Set<number>();
  while (ports.size < 3) ports.add(await freePort());
  const [plainPort, controllerPort, oauthPort] = [...ports] as [number, number, number];
  const cfg = loadStackConfig({
    ...process.env,
    POIMEN_STATE_DIR: dir,
    POIMEN_STACK_KAFKA_PORT: String(plainPort),
    POIMEN_STACK_KAFKA_CONTROLLER_PORT: String(controllerPort),
  });
  await ensureKafka(cfg, silentProgress);
  const service: Service = kafkaService(cfg, {
    name: 'OAUTH',
    port: oauthPort,
    protocol: 'SASL_PLAINTEXT',
    properties: [
      'listener.name.oauth.sasl.enabled.mechanisms=OAUTHBEARER',
      'listener.name.oauth.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;',
      'listener.name.oauth.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler',
      `listener.name.oauth.oauthbearer.connections.max.reauth.ms=${opts.reauthMs}`,
      // Kafka 4.1's default (DefaultJwtValidator, made without a key resolver) only parses a token, checking no
      // signature, issuer or audience: the validator that checks them against the JWKS is named explicitly.
      'sasl.oauthbearer.jwt.validator.class=org.apache.kafka.common.security.oauthbearer.BrokerJwtValidator',
      `sasl.oauthbearer.jwks.endpoint.url=${tokens.jwksUrl}`,
      `sasl.oauthbearer.expected.issuer=${opts.issuer}`,
      `sasl.oauthbearer.expected.audience=${opts.audience}`,
    ],
    jvmOptions: [`-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=${tokens.jwksUrl}`],
  });
  await service.start();
  try {
    await waitFor(() => service.isReady(), {
      timeoutMs: 120_000,
      intervalMs: 250,
      what: 'OAUTHBEARER Kafka broker',
    });
  } catch (err) {
    await stopDaemon(service.pidFile);
    const tail = fs.existsSync(service.logFile) ? fs.readFileSync(service.logFile, 'utf8').slice(-3000) : '';
    throw new Error(`${(err as Error).message}; log ${service.logFile}:\n${tail}`, { cause: err });
  }
  return {
    plainBrokers: `127.0.0.1:${plainPort}`,
    oauthBrokers: `127.0.0.1:${oauthPort}`,
    stop: async () => {
      await stopDaemon(service.pidFile);
    },
  };
}
