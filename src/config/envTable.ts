/**
 * Every environment variable the config module reads, once: the table of their rows, by concept, in the order
 * `--help` and `poimen-relay config` list them. A row (envVar.ts) holds the variable's meaning, which commands read
 * it, whether a flag may stand for it and, for a variable the config module parses, its schema and default; the
 * rows live in vars/, a file per concept. `--help` lists and the override flags are generated from this table, the
 * loaders read through its rows, and test/unit/envTable.test.ts keeps it equal to what the loaders actually read.
 */
import type { EnvReader, EnvVar } from './envVar';
import { INGEST } from './vars/ingest';
import { KAFKA } from './vars/kafka';
import { PROCESS } from './vars/process';
import { RUNS_API } from './vars/runsApi';
import { TEMPORAL } from './vars/temporal';
import { TRACING } from './vars/tracing';
import { WORKER } from './vars/worker';

export type { EnvReader, EnvVar } from './envVar';

export const ENV_VARS: readonly EnvVar[] = [
  KAFKA,
  TEMPORAL,
  RUNS_API,
  PROCESS,
  INGEST,
  WORKER,
  TRACING,
].flatMap((concept): EnvVar[] => Object.values(concept));

export function envVarsReadBy(reader: EnvReader): EnvVar[] {
  return ENV_VARS.filter((v) => v.readBy.includes(reader));
}

/** The flag that stands for a variable: its name in lower case with dashes (KAFKA_BROKERS: --kafka-brokers). */
export function flagOf(name: string): string {
  return `--${name.toLowerCase().replace(/_/g, '-')}`;
}

/**
 * Flags given on the command line, written over the environment before any loader reads it, so a flag wins
 * over its variable everywhere in the process (and is validated like it).
 */
export function applyFlagOverrides(values: Readonly<Record<string, string>>): void {
  for (const [name, value] of Object.entries(values)) process.env[name] = value;
}
