/**
 * What the bench, the profiler and the chaos tool share as command lines: flag values, and how a run that failed
 * ends. A bad flag is commander's one line naming it (`error: option '--n <n>' argument '0' is invalid. must be a
 * whole number ≥ 1`); a bad setting, or a stack that cannot start, is one line naming it with the relay CLI's exit
 * code (docs/cli.md, 2 for a setting); anything else is a bug and keeps its stack trace, exit 1.
 */
import { InvalidArgumentError } from 'commander';
import { exitCodeOf, failureText, isUserFacingError } from 'poimen-relay/internal/errors';

/** A whole number of at least `min`, written in digits. */
export const intAtLeast =
  (min: number) =>
  (v: string): number => {
    const n = Number(v);
    if (!/^\d+$/.test(v) || n < min) throw new InvalidArgumentError(`must be a whole number ≥ ${min}`);
    return n;
  };

/** Ends the tool's process on what stopped it, the tool's name first. */
export function exitFailed(tool: string, err: unknown): never {
  process.stderr.write(`${tool}: ${failureText(err)}\n`);
  process.exit(isUserFacingError(err) ? exitCodeOf(err) : 1);
}
