/** A bad configuration value. The message is one line that names the variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super(`invalid configuration: ${variable} ${reason}`);
  }
}

/** A missing host tool (java, mvn, go) or a stack service that cannot be started. */
export class StackError extends Error {
  override readonly name = 'StackError';
}

/** Errors a CLI prints as one line, without a stack trace. */
export function isUserFacingError(err: unknown): err is ConfigError | StackError {
  return err instanceof ConfigError || err instanceof StackError;
}
