/**
 * The shape of one row of the env table (envTable.ts) and how a loader reads a variable through its row. A row is
 * the one place a variable is spelled: its name, its one-line meaning, who reads it, whether a flag stands for it
 * and, for a variable the config module parses, its schema (with its range) and its default. The loaders (env.ts,
 * otelEnv.ts) name a variable only by its row, so a name or a default is never written twice.
 */
import type { z } from 'zod';
import { type Env, read } from './schema';

/** The processes and commands that load the configuration (a one-shot command loads it as `cli`). */
export type Role = 'ingester' | 'worker' | 'cli';

/** Who reads a variable: the two processes, the one-shot commands by the service they talk to. */
export type EnvReader = 'ingest' | 'worker' | 'kafka-cli' | 'temporal-cli';

/** The readers of most rows: the two processes, and they with the commands that talk to Kafka or Temporal. */
export const RELAY: readonly EnvReader[] = ['ingest', 'worker'];
export const KAFKA_USERS: readonly EnvReader[] = ['ingest', 'worker', 'kafka-cli'];
export const TEMPORAL_USERS: readonly EnvReader[] = ['ingest', 'worker', 'temporal-cli'];

export interface EnvVar {
  name: string;
  description: string;
  readBy: readonly EnvReader[];
  /**
   * Present: the commands that read it also take `flagOf(name) <flagArg>`, which wins over the variable. Never
   * for secrets or certificate paths: a command line shows up in `ps` and shell history.
   */
  flagArg?: string;
  /**
   * Where Kafka or Temporal is and how to reach and authenticate to it (address, TLS, credentials): the same for
   * every process and command of a deployment, unlike the settings of how the relay behaves.
   */
  connection?: true;
  /**
   * Read from the environment by an SDK itself (Temporal's envconfig, OpenTelemetry's), not through the relay's
   * loaders: honoured, so listed, with no default here (the SDK's applies). A schema, when the row has one, is
   * only checked at start (otelEnv.ts): the value stays the SDK's to read.
   */
  sdk?: true;
}

/** A default that differs by process (the metrics port, the client id). */
export class PerRole<T> {
  constructor(readonly byRole: Readonly<Record<Role, T>>) {}
}
export const perRole = <T>(byRole: Readonly<Record<Role, T>>): PerRole<T> => new PerRole(byRole);

/** A variable the config module parses; unset, it has no value (the feature it turns on is off). */
export interface ParsedVar<T> extends EnvVar {
  /** Parses the trimmed value; its ranges are the variable's, its messages follow `NAME = "value": `. */
  schema: z.ZodType<T>;
}

/** A variable the config module parses, with the value it takes when unset. */
export interface DefaultedVar<T> extends ParsedVar<T> {
  default: T | PerRole<T>;
}

type Unnamed<R extends EnvVar> = Omit<R, 'name'>;

/** A parsed row, typed by its schema: the default must be a value of it. */
export function parsed<T>(
  row: Unnamed<ParsedVar<T>> & { default: NoInfer<T> | PerRole<NoInfer<T>> },
): Unnamed<DefaultedVar<T>>;
export function parsed<T>(row: Unnamed<ParsedVar<T>>): Unnamed<ParsedVar<T>>;
export function parsed<T>(row: Unnamed<ParsedVar<T>>): Unnamed<ParsedVar<T>> {
  return row;
}

/** A concept's rows, keyed by the variable's name, which each row gets as its `name`: in the table's order. */
export function rows<R extends Record<string, Unnamed<EnvVar>>>(
  spec: R,
): { readonly [K in keyof R & string]: R[K] & { readonly name: K } } {
  return Object.fromEntries(Object.entries(spec).map(([name, row]) => [name, { name, ...row }])) as {
    readonly [K in keyof R & string]: R[K] & { readonly name: K };
  };
}

/** The default a process takes for an unset variable. */
export function defaultOf<T>(v: DefaultedVar<T>, role: Role): T {
  return v.default instanceof PerRole ? (v.default.byRole as Record<Role, T>)[role] : v.default;
}

/** Reads variables of `env` through their rows, as process `role`: a bad value throws the one-line ConfigError. */
export interface VarReader {
  <T>(v: DefaultedVar<T>): T;
  <T>(v: ParsedVar<T>): T | undefined;
}

export function varReader(env: Env, role: Role): VarReader {
  return <T>(v: ParsedVar<T> | DefaultedVar<T>): T | undefined =>
    'default' in v ? read(env, v.name, v.schema, defaultOf(v, role)) : read(env, v.name, v.schema);
}
