/**
 * The integration harness runs the relay on its shipped defaults: the shared builders set only what isolates one
 * test from another (addresses, topics, group, task queue, runs API URL) and the log level. A suite that needs
 * another setting sets it itself, with its reason, where a reader of that suite sees it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ENV_VARS } from '../../src/config/envTable';
import { relayEnv } from '../support/relay';

const ISOLATION = new Set([
  'KAFKA_BROKERS',
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'KAFKA_GROUP_ID',
  'TEMPORAL_TASK_QUEUE',
  'DISPATCH_TOPIC_PATTERN',
  'RUNS_API_URL',
  'LOG_LEVEL',
]);

/** What the relay's two processes read (the dev stack's own variables are not theirs). */
const RELAY_VARS = new Set(
  ENV_VARS.filter((v) => v.readBy.includes('ingest') || v.readBy.includes('worker')).map((v) => v.name),
);
const SUPPORT = path.join(__dirname, '..', 'support');

/**
 * Shared support files that name relay variables as keys on purpose, and why. Nothing else may: a key there
 * would change every suite that uses the file.
 */
const NAMED_ON_PURPOSE: Record<string, { names: string[]; why: string }> = {
  'outage.ts': {
    names: [
      'POIMEN_BREAKER_FAILURES',
      'POIMEN_BREAKER_PROBE_INTERVAL_MS',
      'POIMEN_RUNS_API_CONNECTIONS',
      'POIMEN_WORKER_MAX_ACTIVITIES',
      'RETRY_MAX_ATTEMPTS',
    ],
    why: 'breakerEnv() writes the settings its suite passes; UNCAPPED is the shipped "no attempt cap", stated',
  },
  'oauthRelay.ts': {
    names: [
      'KAFKA_SASL_MECHANISM',
      'KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL',
      'KAFKA_SASL_OAUTHBEARER_CLIENT_ID',
      'KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET',
      'KAFKA_SASL_OAUTHBEARER_SCOPE',
      'KAFKA_SASL_OAUTHBEARER_AUDIENCE',
    ],
    why: 'the OAUTHBEARER suites configure the relay for their token server and broker: what they test',
  },
  'operatorCli.ts': {
    names: ['KAFKA_SSL_CA', 'KAFKA_SSL_CERT', 'KAFKA_SSL_KEY'],
    why: 'the ACL suite runs each operator command under its own certificate, the principal its rows are granted to',
  },
};

describe('the integration harness on shipped defaults', () => {
  it('relayEnv() sets no relay variable but the isolation ones and LOG_LEVEL', () => {
    const saved = { ...process.env };
    // As a unit test sees it: none of the relay's variables inherited from the shell.
    for (const name of RELAY_VARS) delete process.env[name];
    try {
      const env = relayEnv({
        tenantPattern: '^poimen\\.t\\.dispatch$',
        groupId: 'g',
        taskQueue: 'q',
        runsApiUrl: 'http://127.0.0.1:1',
      });
      const set = Object.keys(env).filter((k) => RELAY_VARS.has(k) && !ISOLATION.has(k));
      expect(set).toEqual([]);
      for (const name of ISOLATION) expect(env[name]).toBeDefined();
    } finally {
      process.env = saved;
    }
  });

  it("relayEnv() drops the shell's relay behaviour variables and keeps its connection ones", () => {
    const saved = { ...process.env };
    // A developer's shell, as it may be: behaviour settings exported, and an external stack's credentials.
    const behaviour = {
      RETRY_MAX_ATTEMPTS: '2',
      POIMEN_WORKER_MAX_ACTIVITIES: '1',
      RUNS_API_TIMEOUT_MS: '50',
      LOG_FORMAT: 'pretty',
      RUNS_API_TOKEN: 'shell-token',
    };
    const connection = {
      KAFKA_SASL_MECHANISM: 'plain',
      KAFKA_SASL_USERNAME: 'u',
      KAFKA_SASL_PASSWORD: 'p',
      KAFKA_SSL_CA: '/ca.pem',
      TEMPORAL_API_KEY: 'k',
      TEMPORAL_TLS_CA: '/temporal-ca.pem',
      TEMPORAL_GRPC_META_X_ROUTE: 'east',
    };
    Object.assign(process.env, behaviour, connection);
    try {
      const env = relayEnv({
        tenantPattern: '^poimen\\.t\\.dispatch$',
        groupId: 'g',
        taskQueue: 'q',
        runsApiUrl: 'http://127.0.0.1:1',
      });
      expect(Object.keys(behaviour).filter((name) => name in env)).toEqual([]);
      expect(Object.fromEntries(Object.keys(connection).map((name) => [name, env[name]]))).toEqual(
        connection,
      );
    } finally {
      process.env = saved;
    }
  });

  it('no shared support file sets a relay variable but those it names on purpose', () => {
    const found: string[] = [];
    const files = fs
      .readdirSync(SUPPORT, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'));
    for (const file of files) {
      const text = fs.readFileSync(path.join(SUPPORT, file), 'utf8');
      // A key anywhere on a line (`{ RETRY_MAX_ATTEMPTS: '4' }`) or an assignment (`env['RETRY_MAX_ATTEMPTS'] =`).
      for (const m of text.matchAll(/\b['"]?([A-Z][A-Z0-9_]+)['"]?\s*(?::|\]\s*=(?!=))/g)) {
        const name = m[1]!;
        // METRICS_PORT: each process's own port, isolation as the addresses are.
        if (!RELAY_VARS.has(name) || ISOLATION.has(name) || name === 'METRICS_PORT') continue;
        if (NAMED_ON_PURPOSE[file]?.names.includes(name)) continue;
        found.push(`${file}: ${name}`);
      }
    }
    expect(found).toEqual([]);
  });
});
