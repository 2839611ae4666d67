/**
 * Temporal's standard connection settings (the names and TOML profiles of `@temporalio/envconfig`, as the Temporal
 * CLI reads them) beside the SPEC names: what each maps to, which wins where both are set, and the one-line
 * refusals. The connections made from them are exercised on the real stack by it_temporal_envconfig.
 */
import fs from 'node:fs';
import { makeSelfSigned } from '../support/selfSigned';
import os from 'node:os';
import path from 'node:path';
import { type Env, loadRelayConfig } from '../../src/config';
import { ConfigError } from '../../src/errors';
import { ApiKeyFile } from '../../src/temporal/apiKeyFile';
import { waitFor } from '../support/wait';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-temporal-env-'));
const inDir = (name: string) => path.join(dir, name);
const [certPem, keyPem, caPem] = [inDir('c.pem'), inDir('k.pem'), inDir('ca.pem')];
const toml = inDir('temporal.toml');

beforeAll(() => {
  makeSelfSigned(certPem, keyPem, 'poimen-temporal-env');
  fs.copyFileSync(certPem, caPem);
  fs.writeFileSync(
    toml,
    [
      '[profile.default]',
      'address = "127.0.0.1:7233"',
      '',
      '[profile.prod]',
      'address = "prod.tmprl.example:7233"',
      'namespace = "relay-prod"',
      'api_key = "file-key"',
      '[profile.prod.tls]',
      'server_name = "prod.internal"',
      `server_ca_cert_path = "${caPem}"`,
      '[profile.prod.grpc_meta]',
      'x-team = "inbox"',
      'x-drop-me = "1"',
      '',
    ].join('\n'),
  );
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const temporal = (env: Env) => loadRelayConfig('worker', env).temporal;

function refusal(env: Env): ConfigError {
  try {
    loadRelayConfig('worker', env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message.split('\n')).toHaveLength(1);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('Temporal connection settings under Temporal’s own names', () => {
  test('a TOML profile (TEMPORAL_CONFIG_FILE + TEMPORAL_PROFILE) gives address, namespace, key, TLS and metadata', () => {
    expect(temporal({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'prod' })).toEqual({
      address: 'prod.tmprl.example:7233',
      namespace: 'relay-prod',
      taskQueue: 'poimen-dispatch',
      uiUrl: 'http://127.0.0.1:8233',
      apiKey: 'file-key',
      tls: {
        caPath: caPem,
        serverName: 'prod.internal',
        from: { ca: expect.stringContaining('server_ca_cert') },
      },
      grpcMeta: { 'x-team': 'inbox', 'x-drop-me': '1' },
      profile: 'prod',
    });
    // Without TEMPORAL_PROFILE the file's `default` profile is used, as the Temporal CLI does.
    expect(temporal({ TEMPORAL_CONFIG_FILE: toml })).toMatchObject({
      address: '127.0.0.1:7233',
      profile: 'default',
    });
  });

  test('variables win over the file; SPEC names win over Temporal’s names for the same setting', () => {
    const t = temporal({
      TEMPORAL_CONFIG_FILE: toml,
      TEMPORAL_PROFILE: 'prod',
      TEMPORAL_ADDRESS: '10.0.0.5:7233',
      TEMPORAL_NAMESPACE: 'other',
      TEMPORAL_API_KEY: 'env-key',
      TEMPORAL_TLS_SERVER_NAME: 'override.internal',
      // Both name a CA: the the contract's TEMPORAL_TLS_CA wins over TEMPORAL_TLS_SERVER_CA_CERT_PATH and the file.
      TEMPORAL_TLS_CA: certPem,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: caPem,
      // Likewise the client pair: TEMPORAL_TLS_CERT/KEY win over TEMPORAL_TLS_CLIENT_*.
      TEMPORAL_TLS_CERT: certPem,
      TEMPORAL_TLS_KEY: keyPem,
      TEMPORAL_TLS_CLIENT_CERT_DATA: fs.readFileSync(caPem, 'utf8'),
      TEMPORAL_TLS_CLIENT_KEY_DATA: fs.readFileSync(keyPem, 'utf8'),
      TEMPORAL_GRPC_META_X_DROP_ME: '',
      TEMPORAL_GRPC_META_X_REQUEST_SOURCE: 'poimen',
    });
    expect(t).toMatchObject({
      address: '10.0.0.5:7233',
      namespace: 'other',
      apiKey: 'env-key',
      tls: { caPath: certPem, certPath: certPem, keyPath: keyPem, serverName: 'override.internal' },
      // Every `_` of a variable's name becomes `-` (the SDK alone would turn only the first).
      grpcMeta: { 'x-team': 'inbox', 'x-request-source': 'poimen' },
    });
    expect(t.tls?.from).toBeUndefined();
  });

  test('client certificate pair and CA inline (*_DATA), named in errors by their variables', () => {
    const t = temporal({
      TEMPORAL_ADDRESS: 'tmprl.example:7233',
      TEMPORAL_TLS_CLIENT_CERT_DATA: fs.readFileSync(certPem, 'utf8'),
      TEMPORAL_TLS_CLIENT_KEY_DATA: fs.readFileSync(keyPem, 'utf8'),
      TEMPORAL_TLS_SERVER_CA_CERT_DATA: fs.readFileSync(caPem, 'utf8'),
    });
    expect(t.tls).toEqual({
      certPem: fs.readFileSync(certPem, 'utf8'),
      keyPem: fs.readFileSync(keyPem, 'utf8'),
      caPem: fs.readFileSync(caPem, 'utf8'),
      from: {
        cert: 'TEMPORAL_TLS_CLIENT_CERT_DATA/TEMPORAL_TLS_CLIENT_KEY_DATA',
        ca: 'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
      },
    });
    expect(
      temporal({ TEMPORAL_TLS_CLIENT_CERT_PATH: certPem, TEMPORAL_TLS_CLIENT_KEY_PATH: keyPem }).tls,
    ).toEqual({
      certPath: certPem,
      keyPath: keyPem,
      from: { cert: 'TEMPORAL_TLS_CLIENT_CERT_PATH/TEMPORAL_TLS_CLIENT_KEY_PATH' },
    });
  });

  test('TEMPORAL_TLS turns TLS on with the system roots, or off even with an API key', () => {
    expect(temporal({ TEMPORAL_TLS: 'true' }).tls).toEqual({});
    const off = temporal({ TEMPORAL_TLS: 'false', TEMPORAL_API_KEY: 'k' });
    expect(off).toMatchObject({ tlsDisabled: true, apiKey: 'k' });
    expect(off.tls).toBeUndefined();
  });

  test('TEMPORAL_API_KEY_FILE: the file is named, its key checked at start, not copied into the config', () => {
    const keyFile = inDir('api-key');
    fs.writeFileSync(keyFile, 'key-from-file\n');
    const t = temporal({
      TEMPORAL_API_KEY_FILE: keyFile,
      TEMPORAL_CONFIG_FILE: toml,
      TEMPORAL_PROFILE: 'prod',
    });
    expect(t.apiKeyFile).toBe(keyFile);
    // The file wins over the profile's api_key.
    expect(t.apiKey).toBeUndefined();
  });

  test.each<[string, Env, string]>([
    ['TEMPORAL_PROFILE', { TEMPORAL_CONFIG_FILE: '<toml>', TEMPORAL_PROFILE: 'staging' }, 'no such profile'],
    [
      'TEMPORAL_CONFIG_FILE',
      { TEMPORAL_CONFIG_FILE: '/nonexistent/temporal.toml' },
      'is not a readable file',
    ],
    ['TEMPORAL_CONFIG_FILE', { TEMPORAL_CONFIG_FILE: '<bad toml>' }, 'does not load'],
    ['TEMPORAL_API_KEY_FILE', { TEMPORAL_API_KEY_FILE: '<key>', TEMPORAL_API_KEY: 'k' }, 'set only one'],
    ['TEMPORAL_API_KEY_FILE', { TEMPORAL_API_KEY_FILE: '<empty>' }, 'must hold one key'],
    ['TEMPORAL_TLS', { TEMPORAL_TLS: 'maybe' }, 'must be true or false'],
    [
      'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
      { TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'yes' },
      'must be true or false',
    ],
    ['TEMPORAL_TLS', { TEMPORAL_TLS: 'false', TEMPORAL_TLS_CA: '<ca>' }, 'certificates are configured too'],
    [
      'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
      { TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'true' },
      'not supported',
    ],
    ['TEMPORAL_TLS_CLIENT_KEY_PATH', { TEMPORAL_TLS_CLIENT_CERT_PATH: '<cert>' }, 'set together'],
    ['TEMPORAL_TLS_SERVER_CA_CERT_DATA', { TEMPORAL_TLS_SERVER_CA_CERT_DATA: 'not pem' }, 'holds no PEM'],
    [
      'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
      { TEMPORAL_TLS_SERVER_CA_CERT_PATH: '/nonexistent.pem' },
      'not a readable',
    ],
    ['TEMPORAL_GRPC_META_X_ODD', { TEMPORAL_GRPC_META_X_ODD: 'line\nbreak' }, 'printable ASCII'],
  ])('%s: a bad value stops start-up with one line naming it', (variable, raw, reason) => {
    const badToml = inDir('bad.toml');
    fs.writeFileSync(badToml, '[profile.default\naddress = ');
    const empty = inDir('empty-key');
    fs.writeFileSync(empty, '\n');
    const key = inDir('good-key');
    fs.writeFileSync(key, 'k2');
    const subst: Record<string, string> = {
      '<toml>': toml,
      '<bad toml>': badToml,
      '<empty>': empty,
      '<key>': key,
      '<ca>': caPem,
      '<cert>': certPem,
    };
    const env = Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, subst[v!] ?? v]));
    const err = refusal(env);
    expect(err.variable).toBe(variable);
    expect(err.message).toContain(reason);
  });

  test('a secret from the file or a variable is never echoed in a refusal', () => {
    const err = refusal({ TEMPORAL_API_KEY: 'sëcret-key' });
    expect(err.message).not.toContain('sëcret');
    expect(err.variable).toBe('TEMPORAL_API_KEY');
  });
});

describe('ApiKeyFile: a rotated key without a restart', () => {
  test('a change of the file is seen and announced; an empty file mid-rotation keeps the key in use', async () => {
    const file = inDir('rotating-key');
    fs.writeFileSync(file, 'key-1\n');
    const source = new ApiKeyFile(file, undefined, 100);
    const seen: string[] = [];
    source.onChange((k) => seen.push(k));
    expect(source.current()).toBe('key-1');
    fs.writeFileSync(file, '');
    fs.writeFileSync(file, 'key-2\n');
    await waitFor(() => source.current() === 'key-2', { timeoutMs: 10_000, what: 'the rotated key' });
    expect(seen).toEqual(['key-2']);
    fs.writeFileSync(file, '');
    const before = source.rereads;
    await waitFor(() => source.rereads >= before + 3, {
      timeoutMs: 10_000,
      what: 'three reads of the empty file',
    });
    expect(source.current()).toBe('key-2');
    expect(seen).toEqual(['key-2']);
    source.close();
  });
});
