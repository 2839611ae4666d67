/** A bad configuration value. The message is one line that names the variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly variable: string,
    readonly reason: string,
  ) {
    super(`invalid configuration: ${variable} ${reason}`);
  }
}

/** A missing host tool (java, mvn, go) or a stack service that cannot be started. */
export class StackError extends Error {
  override readonly name = 'StackError';
}

/** What a command was asked about does not exist (a tenant's DLQ topic, a namespace). */
export class NotFoundError extends Error {
  override readonly name = 'NotFoundError';
}

/** Kafka or Temporal did not answer in time; the message names the service and its address. */
export class UnreachableError extends Error {
  override readonly name = 'UnreachableError';
}

/** The service answered and refused this client: credentials, certificates, ACLs. */
export class AccessRefusedError extends Error {
  override readonly name = 'AccessRefusedError';
}

/**
 * Another run holds what this command needs (a DLQ command already working on the tenant's dead letters): it did
 * nothing, and the message says when to retry.
 */
export class BusyError extends Error {
  override readonly name = 'BusyError';
}

/**
 * The CLI's exit codes, one per class of failure (docs/cli.md#exit-codes). 1 is "the answer is no"
 * (not found, not ready), never a crash: a bug exits 70 (sysexits' EX_SOFTWARE) with its stack trace.
 */
export const EXIT = {
  ok: 0,
  notFound: 1,
  usage: 2,
  topicsDiffer: 3,
  unreachable: 4,
  accessRefused: 5,
  busy: 6,
  incomplete: 7,
  internal: 70,
} as const;

type UserFacingError =
  ConfigError | StackError | NotFoundError | UnreachableError | AccessRefusedError | BusyError;

/** Errors a CLI prints as one line, without a stack trace. */
export function isUserFacingError(err: unknown): err is UserFacingError {
  return (
    err instanceof ConfigError ||
    err instanceof StackError ||
    err instanceof NotFoundError ||
    err instanceof UnreachableError ||
    err instanceof AccessRefusedError ||
    err instanceof BusyError
  );
}

/**
 * What a command prints when it fails: one line for a configuration, usage or service problem (isUserFacingError),
 * the stack trace for anything else, which is a bug. Every entry point (the relay's CLI, poimen-dev, the bench, the
 * profiler, the chaos tool) prints this after its own name.
 */
export function failureText(err: unknown): string {
  if (isUserFacingError(err)) return err.message;
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}

export function exitCodeOf(err: unknown): number {
  if (err instanceof NotFoundError) return EXIT.notFound;
  if (err instanceof UnreachableError) return EXIT.unreachable;
  if (err instanceof AccessRefusedError) return EXIT.accessRefused;
  if (err instanceof BusyError) return EXIT.busy;
  if (err instanceof ConfigError || err instanceof StackError) return EXIT.usage;
  return EXIT.internal;
}

/**
 * An error and its causes, outermost first: the Temporal SDK nests them in `cause`, kafkajs in `cause` or
 * `originalError`. Classifiers look along it by class, type or code, never by message text.
 */
export function errorChain(err: unknown): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (let e: unknown = err; e && typeof e === 'object' && !out.includes(e as Record<string, unknown>);) {
    const o = e as Record<string, unknown>;
    out.push(o);
    e = o['cause'] ?? o['originalError'];
  }
  return out;
}
