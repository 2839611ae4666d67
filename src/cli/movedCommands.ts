/**
 * Commands that are not the relay's: the local dev stack and the demo live in a checkout's devstack/, with their
 * own entry (devstack/bin/poimen-dev.js). Typed here by habit, they get one line saying where, not "unknown command".
 */
const DEV_ENTRY = 'node devstack/bin/poimen-dev.js';

const MOVED: Readonly<Record<string, string>> = {
  stack: `${DEV_ENTRY} stack up|down|status|provision (npm run stack:up)`,
  demo: `${DEV_ENTRY} demo (npm run demo)`,
};

/** The one line for `poimen-relay <args>` when its command is a dev command, else undefined. */
export function movedCommand(args: readonly string[]): string | undefined {
  const name = args[0];
  if (name === undefined || !Object.hasOwn(MOVED, name)) return undefined;
  return `'${name}' is not a relay command: the dev stack lives in a checkout of the repository, run ${MOVED[name]}`;
}
