/**
 * The effective configuration of a relay process: every variable its role reads (the env table's rows), the value
 * it runs with and where that came from. `poimen-relay config` prints it and each process logs it once at start,
 * so what a deployment runs with is seen, not inferred from manifests. Secrets show only whether they are set.
 * Owner of "what a process runs with"; the rows (vars/) stay the owners of parsing and defaults.
 */
import { type EnvReader, envVarsReadBy } from './envTable';
import { KAFKA } from './vars/kafka';
import { TEMPORAL } from './vars/temporal';
import { type RelayConfig, type Role, loadRelayConfig } from './env';
import { type Env, type Reading, watchReads } from './schema';
import { unhonouredOtelVariables } from './otelEnv';
import { isSecretName, shownUrl } from '../redact';

export type ServiceRole = Exclude<Role, 'cli'>;

/**
 * Where a value came from: the environment (a flag counts, it is written there first), the loader's default,
 * Temporal's config file profile, or nowhere (unset, no default: the feature is off).
 */
export type SettingSource = 'environment' | 'default' | 'file' | 'unset';

export interface Setting {
  name: string;
  /** As the process uses it, in the variable's own notation; a secret's is `set` or null. */
  value: string | null;
  source: SettingSource;
}

export const ROLE_READER: Readonly<Record<ServiceRole, EnvReader>> = { ingester: 'ingest', worker: 'worker' };

/** Variables Temporal's config file (TEMPORAL_CONFIG_FILE / TEMPORAL_PROFILE) can also set, and their field. */
const FROM_TEMPORAL_PROFILE: Readonly<Record<string, (cfg: RelayConfig) => unknown>> = {
  [TEMPORAL.TEMPORAL_ADDRESS.name]: (cfg) => cfg.temporal.address,
  [TEMPORAL.TEMPORAL_NAMESPACE.name]: (cfg) => cfg.temporal.namespace,
  [TEMPORAL.TEMPORAL_API_KEY.name]: (cfg) => cfg.temporal.apiKey,
};

/** Unset variables whose default the loader derives from others (KAFKA_SSL: on when KAFKA_SSL_CA is set). */
const DERIVED: Readonly<Record<string, (cfg: RelayConfig) => unknown>> = {
  [KAFKA.KAFKA_SSL.name]: (cfg) => cfg.kafka.ssl,
};

/** A value as printed: a URL without its credentials (userinfo, secret query values). */
function shown(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (value instanceof RegExp) return value.source;
  if (typeof value === 'object') return JSON.stringify(value);
  return shownUrl(String(value as string | number | boolean));
}

/**
 * Loads the role's configuration as the process does (an invalid value throws the same one-line ConfigError)
 * and explains it: one setting per variable the role reads, in the env table's order.
 */
export function explainRelayConfig(
  role: ServiceRole,
  env: Env = process.env,
): { cfg: RelayConfig; settings: Setting[]; unhonoured: string[] } {
  const readings = new Map<string, Reading>();
  const stop = watchReads(env, (r) => readings.set(r.name, r));
  let cfg: RelayConfig;
  try {
    cfg = loadRelayConfig(role, env);
  } finally {
    stop();
  }
  const settings = envVarsReadBy(ROLE_READER[role]).map(({ name }): Setting => {
    const raw = env[name];
    const isSet = raw !== undefined && raw.trim() !== '';
    const secret = isSecretName(name);
    if (isSet)
      return {
        name,
        value: secret ? 'set' : (shown(readings.get(name)?.value) ?? raw),
        source: 'environment',
      };
    const derived = DERIVED[name]?.(cfg);
    if (derived !== undefined) return { name, value: shown(derived), source: 'default' };
    const fromProfile = FROM_TEMPORAL_PROFILE[name]?.(cfg);
    const fallback = readings.get(name)?.value;
    if (fromProfile !== undefined && cfg.temporal.profile !== undefined && fromProfile !== fallback)
      return { name, value: secret ? 'set' : shown(fromProfile), source: 'file' };
    if (fallback === undefined) return { name, value: null, source: 'unset' };
    return { name, value: secret ? 'set' : shown(fallback), source: 'default' };
  });
  // OpenTelemetry's variables are many and an environment often sets them for every process: one the relay does
  // not read is named at start, so nobody takes it for applied.
  const unhonoured = unhonouredOtelVariables(
    env,
    settings.map((s) => s.name),
  );
  return { cfg, settings, unhonoured };
}
