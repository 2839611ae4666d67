/**
 * What every command shares, applied once to the whole tree so no command can miss it: required options say
 * so in the help, every help ends with the exit codes, and each command that reads the environment lists those
 * variables (from src/config/envTable.ts) and takes a flag for each one that has a flag, which wins over it.
 */
import { type Command, Help, Option } from 'commander';
import { type EnvReader, type EnvVar, applyFlagOverrides, envVarsReadBy, flagOf } from '../config/envTable';
import { ConfigError, EXIT } from '../errors';

/** What each exit code means (docs/cli.md#exit-codes); typed so a new code cannot go undocumented. */
const EXIT_MEANINGS: Record<keyof typeof EXIT, string> = {
  ok: 'ok',
  notFound:
    'not found: the answer is no (no such dispatch, DLQ topic or namespace; a stack service not ready)',
  usage: 'usage or configuration: an unknown, missing or invalid option, flag or variable',
  topicsDiffer: 'topics apply: declared topics exist with settings that differ',
  unreachable: 'unreachable: Kafka or Temporal did not answer in time (worth retrying)',
  accessRefused: 'refused: credentials, certificates or ACLs',
  busy: 'busy: another run is working on the same thing (a DLQ command on the same tenant); retry later',
  incomplete:
    'incomplete: a DLQ command left records for a later run (its progress is full); replay or discard older ones',
  internal: 'internal error, a bug: printed with its stack trace',
};

export function exitCodesHelp(): string {
  const rows = (Object.keys(EXIT) as (keyof typeof EXIT)[]).map(
    (k) => `  ${String(EXIT[k]).padStart(2)}  ${EXIT_MEANINGS[k]}`,
  );
  return `\nExit codes:\n${rows.join('\n')}`;
}

/** The variables each command reads, by command path (test/unit/cliProgram.test.ts: every command is here). */
export const COMMAND_READERS: Readonly<Record<string, EnvReader | readonly EnvReader[]>> = {
  ingest: 'ingest',
  worker: 'worker',
  config: ['ingest', 'worker'],
  'topics apply': 'kafka-cli',
  'topics list': 'kafka-cli',
  'dlq list': 'kafka-cli',
  'dlq replay': 'kafka-cli',
  'dlq redrive': 'kafka-cli',
  'dlq discard': 'kafka-cli',
  'dlq send-test': 'kafka-cli',
  'dlq purge-tests': 'kafka-cli',
  'dlq summary': 'kafka-cli',
  'temporal setup': 'temporal-cli',
  'dispatch status': 'temporal-cli',
  'tenant pause': 'kafka-cli',
  'tenant resume': ['kafka-cli', 'temporal-cli'],
  'tenant status': 'kafka-cli',
};

function envHelp(vars: EnvVar[], withFlags: boolean): string {
  const width = Math.max(...vars.map((v) => v.name.length)) + 2;
  const rows = vars.map((v) => `  ${v.name.padEnd(width)}${v.description}`);
  const note = `${withFlags ? 'a flag above wins over its variable; ' : ''}defaults in docs/configuration.md`;
  return `\nEnvironment (${note}):\n${rows.join('\n')}`;
}

/** Variables set from a flag in this run, with the flag: a bad value is reported under the flag's name. */
const givenAsFlag = new Map<string, string>();

function addEnv(cmd: Command, readers: EnvReader | readonly EnvReader[]): void {
  const all = (typeof readers === 'string' ? [readers] : readers).flatMap((r) => envVarsReadBy(r));
  const vars = all.filter((v, i) => all.findIndex((w) => w.name === v.name) === i);
  const flagged = vars.filter((v) => v.flagArg);
  const options = flagged.map((v) => {
    const option = new Option(`${flagOf(v.name)} ${v.flagArg}`, `${v.description} (env: ${v.name})`);
    cmd.addOption(option);
    return { name: v.name, flag: flagOf(v.name), key: option.attributeName() };
  });
  cmd.hook('preAction', () => {
    const values: Record<string, string> = {};
    for (const o of options) {
      if (cmd.getOptionValueSource(o.key) !== 'cli') continue;
      const value = String(cmd.getOptionValue(o.key));
      // An empty variable means "the default"; an empty flag is an unset shell variable in a script.
      if (value.trim() === '') throw new ConfigError(o.flag, 'must not be empty');
      values[o.name] = value;
      givenAsFlag.set(o.name, o.flag);
    }
    applyFlagOverrides(values);
  });
  cmd.addHelpText('after', envHelp(vars, flagged.length > 0));
}

/** A ConfigError about a variable that came from a flag, told with the flag the user typed. */
export function nameTheFlag(err: unknown): unknown {
  if (!(err instanceof ConfigError)) return err;
  const flag = givenAsFlag.get(err.variable);
  return flag ? new ConfigError(`${flag} (${err.variable})`, err.reason) : err;
}

const helpConfiguration = {
  optionDescription(this: Help, option: Option): string {
    const text = Help.prototype.optionDescription.call(this, option);
    return option.mandatory ? `${text} (required)` : text;
  },
};

export function applyConventions(program: Command): void {
  program.addHelpText('afterAll', exitCodesHelp());
  (function walk(cmd: Command, path: string[]): void {
    cmd.configureHelp(helpConfiguration);
    const reader = COMMAND_READERS[path.join(' ')];
    if (reader) addEnv(cmd, reader);
    for (const sub of cmd.commands) walk(sub, [...path, sub.name()]);
  })(program, []);
}
