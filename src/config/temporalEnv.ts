/* eslint-disable max-lines -- every Temporal setting's precedence chain read in one place */
/**
 * Temporal's own connection settings (`@temporalio/envconfig`: the variables and TOML profiles the Temporal CLI
 * and every SDK read), beside the contract's names the relay has always read. Precedence, per setting:
 *   contract variable  >  Temporal's standard variable  >  the TOML profile  >  the relay's default.
 * TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and TEMPORAL_API_KEY are both at once. TEMPORAL_API_KEY_FILE (an extension:
 * a mounted secret, re-read when it changes) may not be set together with TEMPORAL_API_KEY. Kept whole past 300
 * lines: it is that one precedence rule applied setting by setting, and its refusals read best beside it.
 */
import fs from 'node:fs';
import { createSecureContext } from 'node:tls';
import {
  type ClientConfigProfile,
  type ConfigDataSource,
  loadClientConfig,
  loadClientConfigProfile,
} from '@temporalio/envconfig';
import { ConfigError } from '../errors';
import type { ParsedVar } from './envVar';
import { read } from './schema';
import { TEMPORAL } from './vars/temporal';

type Env = Record<string, string | undefined>;

export interface TemporalTls {
  certPath?: string;
  keyPath?: string;
  caPath?: string;
  /** PEM given inline (TEMPORAL_TLS_*_DATA, or the profile's `*_data`) instead of a file. */
  certPem?: string;
  keyPem?: string;
  caPem?: string;
  /** TEMPORAL_TLS_SERVER_NAME: checked against the server's certificate and sent as SNI, instead of the host. */
  serverName?: string;
  /** Where the client pair and the CA came from, for one-line errors; default the contract's names. */
  from?: { cert?: string; ca?: string };
}

/** What Temporal's standard settings add to the contract's TemporalConfig. */
export interface TemporalSettings {
  /** TEMPORAL_API_KEY_FILE: the key is read from this file, and again whenever it changes (rotation). */
  apiKeyFile?: string;
  /** TEMPORAL_TLS=false or the profile's `tls.disabled`: no TLS, also with an API key (a local server, a mesh). */
  tlsDisabled?: boolean;
  /** gRPC metadata sent with every call: the profile's `grpc_meta` and TEMPORAL_GRPC_META_<NAME>. */
  grpcMeta?: Record<string, string>;
  /** The TOML profile in use (TEMPORAL_PROFILE, else `default` when the file has one). */
  profile?: string;
}

/** The contract-named settings as the config module parsed them (defaults applied). */
export interface SpecTemporal {
  address: string;
  namespace: string;
  apiKey?: string;
  tls?: { certPath?: string; keyPath?: string; caPath?: string };
}

/** PEM content checks of the config module: a reason when the content is not what it should be. */
export interface PemChecks {
  ca(content: Buffer): string | undefined;
  cert(content: Buffer): string | undefined;
  key(content: Buffer): string | undefined;
}

const HOST_PORT = /^[A-Za-z0-9.\-_[\]:]+:\d{1,5}$/;
const HEADER_VALUE = /^[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?$/;
export const GRPC_META_PREFIX = 'TEMPORAL_GRPC_META_';
/**
 * Temporal's standard names that only the SDK's loader reads (from the copy of the environment handed to it), so
 * no recording of the relay's own reads sees them: their rows say `sdk`, and the contract's sync test adds them.
 */
export const TEMPORAL_SDK_ENV: readonly string[] = Object.values(TEMPORAL)
  .filter((v) => 'sdk' in v)
  .map((v) => v.name);
/** Where the SDK looks when TEMPORAL_CONFIG_FILE is unset (Linux; $XDG_CONFIG_HOME when set). */
const DEFAULT_FILE = '~/.config/temporalio/temporal.toml';
const set = (v: string | undefined): v is string => v !== undefined && v.trim() !== '';

export function withTemporalEnvConfig<T extends SpecTemporal>(
  env: Env,
  pem: PemChecks,
  spec: T,
): T & TemporalSettings {
  const T = TEMPORAL;
  // Read through their rows: a bad value (an unreadable file, TEMPORAL_TLS=maybe) stops here with its one line.
  const row = <V>(r: ParsedVar<V>) => read(env, r.name, r.schema);
  const configFile = row(T.TEMPORAL_CONFIG_FILE);
  const profileName = row(T.TEMPORAL_PROFILE);
  const apiKeyFile = row(T.TEMPORAL_API_KEY_FILE);
  const tlsFlag = row(T.TEMPORAL_TLS);
  if (row(T.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION) === true) {
    throw new ConfigError(
      T.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION.name,
      `is not supported (the TypeScript SDK cannot skip it): set ${T.TEMPORAL_TLS_SERVER_NAME.name} to the certificate’s name`,
    );
  }
  // GRPC meta variables are applied below: the SDK turns only the first `_` of a name into `-`.
  const sdkEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(env))
    if (v !== undefined && !k.startsWith(GRPC_META_PREFIX)) sdkEnv[k] = v;
  // The SDK reads these again from its copy: it gets them as the relay checked them (trimmed, true/false), so a
  // stray space cannot mean one thing here and another there (a file not read, TLS off).
  const checked = { configFile, profileName, tls: tlsFlag === undefined ? undefined : String(tlsFlag) };
  if (checked.configFile !== undefined) sdkEnv[T.TEMPORAL_CONFIG_FILE.name] = checked.configFile;
  if (checked.profileName !== undefined) sdkEnv[T.TEMPORAL_PROFILE.name] = checked.profileName;
  if (checked.tls !== undefined) sdkEnv[T.TEMPORAL_TLS.name] = checked.tls;
  const where = configFile ?? DEFAULT_FILE;
  let profiles: Record<string, ClientConfigProfile>;
  try {
    profiles = loadClientConfig({ overrideEnvVars: sdkEnv }).profiles;
  } catch (err) {
    throw new ConfigError(
      configFile !== undefined ? T.TEMPORAL_CONFIG_FILE.name : 'the Temporal config file',
      `= ${JSON.stringify(where)}: does not load (${reason(err)})`,
    );
  }
  if (profileName !== undefined && !(profileName in profiles)) {
    const known = Object.keys(profiles).join(', ') || 'none';
    throw new ConfigError(
      T.TEMPORAL_PROFILE.name,
      `= ${JSON.stringify(profileName)}: no such profile in ${where} (${known})`,
    );
  }
  let p: ClientConfigProfile;
  try {
    p = loadClientConfigProfile({ overrideEnvVars: sdkEnv });
  } catch (err) {
    throw new ConfigError(`TEMPORAL_TLS_* or ${where}`, `do not load: ${reason(err)}`);
  }
  const inFile = (key: string) => `${where} [profile.${profileName ?? 'default'}] ${key}`;
  const fromEnvOr = (names: string[], key: string) => names.find((n) => set(env[n])) ?? inFile(key);

  const address = set(env[T.TEMPORAL_ADDRESS.name]) ? spec.address : (p.address ?? spec.address);
  if (!HOST_PORT.test(address)) {
    throw new ConfigError(inFile('address'), `= ${JSON.stringify(address)}: must be host:port`);
  }
  const namespace = set(env[T.TEMPORAL_NAMESPACE.name]) ? spec.namespace : p.namespace || spec.namespace;

  let apiKey = spec.apiKey ?? (p.apiKey || undefined);
  if (apiKeyFile !== undefined) {
    if (set(env[T.TEMPORAL_API_KEY.name])) {
      throw new ConfigError(
        T.TEMPORAL_API_KEY_FILE.name,
        `is set together with ${T.TEMPORAL_API_KEY.name}: set only one`,
      );
    }
    readApiKeyFile(apiKeyFile);
    apiKey = undefined;
  } else if (apiKey !== undefined && !HEADER_VALUE.test(apiKey)) {
    throw new ConfigError(
      fromEnvOr([T.TEMPORAL_API_KEY.name], 'api_key'),
      '= <redacted>: must be printable ASCII',
    );
  }

  const tlsDisabled = p.tls?.disabled === true;
  const tls = tlsSettings(spec, p, pem, fromEnvOr, inFile);
  if (tlsDisabled && tls && (tls.certPath || tls.certPem || tls.caPath || tls.caPem || spec.tls)) {
    throw new ConfigError(
      tlsFlag !== undefined ? T.TEMPORAL_TLS.name : inFile('tls.disabled'),
      'turns TLS off but certificates are configured too',
    );
  }
  const grpcMeta = grpcMetadata(env, p.grpcMeta, inFile('grpc_meta'));
  if (grpcMeta && 'authorization' in grpcMeta && (apiKey !== undefined || apiKeyFile !== undefined)) {
    throw new ConfigError(
      `${GRPC_META_PREFIX}AUTHORIZATION`,
      'is set together with an API key: set only one',
    );
  }
  const profile = profileName ?? ('default' in profiles ? 'default' : undefined);
  const { apiKey: _specKey, tls: _specTls, ...rest } = spec;
  return {
    ...(rest as T),
    address,
    namespace,
    ...(apiKey !== undefined ? { apiKey } : {}),
    ...(apiKeyFile !== undefined ? { apiKeyFile } : {}),
    ...(tlsDisabled ? { tlsDisabled } : tls ? { tls } : {}),
    ...(grpcMeta ? { grpcMeta } : {}),
    ...(profile ? { profile } : {}),
  };
}

/** The key a TEMPORAL_API_KEY_FILE holds now (surrounding whitespace, such as a final newline, dropped). */
export function readApiKeyFile(file: string): string {
  let key: string;
  try {
    key = fs.readFileSync(file, 'utf8').trim();
  } catch {
    throw new ConfigError(
      TEMPORAL.TEMPORAL_API_KEY_FILE.name,
      `= ${JSON.stringify(file)}: is not a readable file`,
    );
  }
  if (!HEADER_VALUE.test(key)) {
    throw new ConfigError(
      TEMPORAL.TEMPORAL_API_KEY_FILE.name,
      `= ${JSON.stringify(file)}: must hold one key of printable ASCII (it is empty or not a header value)`,
    );
  }
  return key;
}

function tlsSettings(
  spec: SpecTemporal,
  p: ClientConfigProfile,
  pem: PemChecks,
  fromEnvOr: (names: string[], key: string) => string,
  inFileKey: (key: string) => string,
): TemporalTls | undefined {
  const t = p.tls;
  if (!spec.tls && !t) return undefined;
  const out: TemporalTls = { ...spec.tls };
  const from: TemporalTls['from'] = {};
  if (!spec.tls?.certPath && (t?.clientCert || t?.clientKey)) {
    const certFrom = fromEnvOr(
      [TEMPORAL.TEMPORAL_TLS_CLIENT_CERT_PATH.name, TEMPORAL.TEMPORAL_TLS_CLIENT_CERT_DATA.name],
      'client_cert',
    );
    const keyFrom = fromEnvOr(
      [TEMPORAL.TEMPORAL_TLS_CLIENT_KEY_PATH.name, TEMPORAL.TEMPORAL_TLS_CLIENT_KEY_DATA.name],
      'client_key',
    );
    if (!t.clientCert || !t.clientKey) {
      // The missing half is named after where the given half came from (a variable, or the file).
      const given = t.clientCert ? certFrom : keyFrom;
      const missing = given.startsWith('TEMPORAL_')
        ? t.clientCert
          ? given.replace('_CERT_', '_KEY_')
          : given.replace('_KEY_', '_CERT_')
        : inFileKey(t.clientCert ? 'client_key' : 'client_cert');
      throw new ConfigError(missing, `must be set together with ${given}`);
    }
    const cert = material(t.clientCert, certFrom, pem.cert);
    const key = material(t.clientKey, keyFrom, pem.key);
    try {
      createSecureContext({ cert: cert.content, key: key.content });
    } catch (err) {
      throw new ConfigError(keyFrom, `does not match ${certFrom} (${reason(err)})`);
    }
    Object.assign(out, cert.path ? { certPath: cert.path } : { certPem: cert.pem });
    Object.assign(out, key.path ? { keyPath: key.path } : { keyPem: key.pem });
    from.cert = `${certFrom}/${keyFrom}`;
  }
  if (!spec.tls?.caPath && t?.serverCACert) {
    const caFrom = fromEnvOr(
      [TEMPORAL.TEMPORAL_TLS_SERVER_CA_CERT_PATH.name, TEMPORAL.TEMPORAL_TLS_SERVER_CA_CERT_DATA.name],
      'server_ca_cert',
    );
    const ca = material(t.serverCACert, caFrom, pem.ca);
    Object.assign(out, ca.path ? { caPath: ca.path } : { caPem: ca.pem });
    from.ca = caFrom;
  }
  if (t?.serverName) out.serverName = t.serverName;
  if (from.cert || from.ca) out.from = from;
  return out;
}

function material(
  source: ConfigDataSource,
  name: string,
  problem: (content: Buffer) => string | undefined,
): { content: Buffer; path?: string; pem?: string } {
  let content: Buffer;
  if ('path' in source) {
    if (!isReadableFile(source.path)) {
      throw new ConfigError(name, `= ${JSON.stringify(source.path)}: is not a readable file`);
    }
    content = fs.readFileSync(source.path);
  } else {
    content = Buffer.from(source.data);
  }
  const why = problem(content);
  // Inline data may be a key: never echoed.
  if (why !== undefined) {
    throw new ConfigError(name, 'path' in source ? `= ${JSON.stringify(source.path)}: ${why}` : why);
  }
  return 'path' in source ? { content, path: source.path } : { content, pem: content.toString('utf8') };
}

function grpcMetadata(
  env: Env,
  fromFile: Record<string, string> | undefined,
  fileKey: string,
): Record<string, string> | undefined {
  const meta: Record<string, string> = {};
  const add = (name: string, header: string, value: string) => {
    if (!/^[a-z0-9][a-z0-9._-]*$/.test(header)) {
      throw new ConfigError(name, `names ${JSON.stringify(header)}, which is not a gRPC metadata name`);
    }
    if (!HEADER_VALUE.test(value)) throw new ConfigError(name, '= <redacted>: must be printable ASCII');
    meta[header] = value;
  };
  for (const [k, v] of Object.entries(fromFile ?? {})) add(fileKey, k.toLowerCase().replaceAll('_', '-'), v);
  for (const [k, v] of Object.entries(env)) {
    if (!k.startsWith(GRPC_META_PREFIX)) continue;
    const header = k.slice(GRPC_META_PREFIX.length).toLowerCase().replaceAll('_', '-');
    // An empty value removes what the file set (Temporal's rule).
    if (v === undefined || v === '') delete meta[header];
    else add(k, header, v);
  }
  return Object.keys(meta).length > 0 ? meta : undefined;
}

function isReadableFile(p: string): boolean {
  try {
    return fs.statSync(p).isFile() && (fs.accessSync(p, fs.constants.R_OK), true);
  } catch {
    return false;
  }
}

function reason(err: unknown): string {
  const code = err && typeof err === 'object' ? (err as { code?: unknown }).code : undefined;
  if (typeof code === 'string') return code;
  return err instanceof Error ? err.message.split('\n')[0]! : String(err);
}
