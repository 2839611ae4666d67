/**
 * The effective configuration (`poimen-relay config`, and the line each process logs at start): every variable a
 * role reads, once, with the value the process runs with and where it came from; secrets only as set or unset;
 * an invalid value still stops with one line.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildProgram } from '../../src/cli/program';
import { BREAKER_DEFAULTS, RETRY_DEFAULTS } from '../../src/config';
import { type Setting, explainRelayConfig } from '../../src/config/effective';
import { envVarsReadBy } from '../../src/config/envTable';
import { ConfigError } from '../../src/errors';
import { makeSelfSigned } from '../support/selfSigned';

const byName = (settings: Setting[]) => new Map(settings.map((s) => [s.name, s]));

describe('the effective configuration', () => {
  it('lists every variable the role reads, once, in the table’s order', () => {
    for (const [role, reader] of [
      ['ingester', 'ingest'],
      ['worker', 'worker'],
    ] as const) {
      const names = explainRelayConfig(role, {}).settings.map((s) => s.name);
      expect(names).toEqual(envVarsReadBy(reader).map((v) => v.name));
    }
  });

  it('with nothing set, the contract’s defaults, each marked default', () => {
    const s = byName(explainRelayConfig('ingester', {}).settings);
    expect(s.get('RETRY_MAX_ATTEMPTS')).toEqual({
      name: 'RETRY_MAX_ATTEMPTS',
      value: String(RETRY_DEFAULTS.maxAttempts),
      source: 'default',
    });
    expect(s.get('RETRY_MAX_DURATION_MS')?.value).toBe(String(RETRY_DEFAULTS.maxDurationMs));
    expect(s.get('RETRY_MAX_INTERVAL_MS')?.value).toBe(String(RETRY_DEFAULTS.maxIntervalMs));
    expect(s.get('KAFKA_GROUP_ID')).toMatchObject({ value: 'poimen-inbox-relay', source: 'default' });
    expect(s.get('DISPATCH_TOPIC_PATTERN')?.value).toBe('^poimen\\.[a-z0-9][a-z0-9_-]{0,62}\\.dispatch$');
    expect(s.get('METRICS_PORT')?.value).toBe('9464');
    const w = byName(explainRelayConfig('worker', {}).settings);
    expect(w.get('RUNS_API_MAX_RPS')).toMatchObject({ value: null, source: 'unset' });
    expect(w.get('POIMEN_BREAKER_FAILURES')?.value).toBe(String(BREAKER_DEFAULTS.failures));
    expect(w.get('METRICS_PORT')?.value).toBe('9465');
  });

  it('a default derived from another variable shows what the process uses: KAFKA_SSL on with a CA', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-effective-ca-'));
    try {
      const [cert, key] = [path.join(dir, 'ca.pem'), path.join(dir, 'ca.key')];
      makeSelfSigned(cert, key, 'poimen-effective');
      expect(byName(explainRelayConfig('worker', {}).settings).get('KAFKA_SSL')).toMatchObject({
        value: 'false',
        source: 'default',
      });
      expect(
        byName(explainRelayConfig('worker', { KAFKA_SSL_CA: cert }).settings).get('KAFKA_SSL'),
      ).toMatchObject({ value: 'true', source: 'default' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a set variable shows the value as the process reads it, marked environment', () => {
    const s = byName(
      explainRelayConfig('ingester', { RETRY_MAX_ATTEMPTS: '10', RETRY_BACKOFF: '2.0' }).settings,
    );
    expect(s.get('RETRY_MAX_ATTEMPTS')).toEqual({
      name: 'RETRY_MAX_ATTEMPTS',
      value: '10',
      source: 'environment',
    });
    expect(s.get('RETRY_BACKOFF')).toMatchObject({ value: '2', source: 'environment' });
  });

  it('secrets show set or unset, never their value', () => {
    const env = {
      RUNS_API_TOKEN: 's3cr3t-token',
      KAFKA_SASL_MECHANISM: 'plain',
      KAFKA_SASL_USERNAME: 'relay',
      KAFKA_SASL_PASSWORD: 'pa55word',
    };
    const settings = explainRelayConfig('worker', env).settings;
    const text = JSON.stringify(settings);
    expect(text).not.toContain('s3cr3t-token');
    expect(text).not.toContain('pa55word');
    const s = byName(settings);
    expect(s.get('RUNS_API_TOKEN')).toMatchObject({ value: 'set', source: 'environment' });
    expect(s.get('KAFKA_SASL_PASSWORD')).toMatchObject({ value: 'set', source: 'environment' });
    expect(s.get('TEMPORAL_API_KEY')).toMatchObject({ value: null, source: 'unset' });
    expect(s.get('KAFKA_SASL_USERNAME')?.value).toBe('relay');
  });

  it('a value from a Temporal config file profile is marked file', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-effective-'));
    try {
      const toml = path.join(dir, 'temporal.toml');
      fs.writeFileSync(
        toml,
        '[profile.prod]\naddress = "prod.example:7233"\nnamespace = "relay-prod"\napi_key = "k-123"\n',
      );
      const s = byName(
        explainRelayConfig('worker', { TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'prod' }).settings,
      );
      expect(s.get('TEMPORAL_ADDRESS')).toMatchObject({ value: 'prod.example:7233', source: 'file' });
      expect(s.get('TEMPORAL_NAMESPACE')).toMatchObject({ value: 'relay-prod', source: 'file' });
      expect(s.get('TEMPORAL_API_KEY')).toMatchObject({ value: 'set', source: 'file' });
      expect(s.get('TEMPORAL_PROFILE')).toMatchObject({ value: 'prod', source: 'environment' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an invalid value stops with the same one line as at start', () => {
    expect(() => explainRelayConfig('ingester', { RETRY_MAX_ATTEMPTS: 'ten' })).toThrow(ConfigError);
    try {
      explainRelayConfig('ingester', { RETRY_MAX_ATTEMPTS: 'ten' });
    } catch (err) {
      expect((err as Error).message).toBe(
        'invalid configuration: RETRY_MAX_ATTEMPTS = "ten": must be a whole number',
      );
    }
  });
});

describe('poimen-relay config', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
    jest.restoreAllMocks();
  });

  async function run(args: string[]): Promise<string> {
    let out = '';
    jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out += String(chunk);
      return true;
    });
    await buildProgram().parseAsync(['config', ...args], { from: 'user' });
    return out;
  }

  it('--json --role ingest prints the ingester’s settings with their sources', async () => {
    process.env.RETRY_MAX_ATTEMPTS = '7';
    const parsed = JSON.parse(await run(['--json', '--role', 'ingest'])) as Record<string, Setting[]>;
    expect(Object.keys(parsed)).toEqual(['ingester']);
    expect(byName(parsed.ingester!).get('RETRY_MAX_ATTEMPTS')).toEqual({
      name: 'RETRY_MAX_ATTEMPTS',
      value: '7',
      source: 'environment',
    });
  });

  it('without --role prints both processes, as a table', async () => {
    const out = await run([]);
    expect(out).toMatch(/^ingester:\n/);
    expect(out).toMatch(/\nworker:\n/);
    expect(out).toMatch(/POIMEN_BREAKER_FAILURES +5 +default/);
  });
});

describe('what the effective configuration never shows', () => {
  it('no secret: a sentinel in every secret-bearing variable never appears in the output', () => {
    const sentinel = 'SENTINEL-0xDEADBEEF';
    const env = {
      KAFKA_SASL_MECHANISM: 'plain',
      KAFKA_SASL_USERNAME: 'relay',
      KAFKA_SASL_PASSWORD: sentinel,
      RUNS_API_TOKEN: sentinel,
      TEMPORAL_API_KEY: sentinel,
      TEMPORAL_TLS_CLIENT_KEY_DATA: `-----BEGIN PRIVATE KEY-----\n${sentinel}\n-----END PRIVATE KEY-----`,
      RUNS_API_URL: `https://relay:${sentinel}@runs.example:8443`,
      OTEL_EXPORTER_OTLP_ENDPOINT: `https://otel:${sentinel}@collector.example:4318`,
    };
    for (const role of ['ingester', 'worker'] as const) {
      // The key data cannot be loaded as a real key: show only what the process would, and never the value.
      let text: string;
      try {
        text = JSON.stringify(explainRelayConfig(role, env).settings);
      } catch (err) {
        text = (err as Error).message;
      }
      expect(text).not.toContain(sentinel);
    }
    const worker = byName(
      explainRelayConfig('worker', { RUNS_API_URL: `https://relay:${sentinel}@runs.example:8443` }).settings,
    );
    expect(worker.get('RUNS_API_URL')?.value).toBe('https://runs.example:8443');
  });
});
