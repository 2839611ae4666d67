import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { testServices } from './testEnv';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(REPO_ROOT, 'bin', 'poimen-relay.js');
/** The dev stack's own entry (`stack`, `demo`): not the relay's CLI. */
const DEV_BIN = path.join(REPO_ROOT, 'devstack', 'bin', 'poimen-dev.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built `poimen-relay` executable as a user would (npm test builds it first). */
export function runCli(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 600_000,
): Promise<CliResult> {
  return startCli(args, env, timeoutMs).result;
}

/** Runs the built dev stack entry (`poimen-dev stack up`, `demo`) as a developer would (npm test builds it). */
export function runDevCli(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 600_000,
): Promise<CliResult> {
  // The dev stack runs on the built relay (dist/, as poimen-relay/internal/*): both builds must be fresh.
  assertBuilt(path.join(REPO_ROOT, 'dist', 'cli', 'main.js'), ['src'], 'npm run build');
  assertBuilt(
    path.join(REPO_ROOT, 'dist-devstack', 'devstack', 'cli', 'main.js'),
    ['devstack', 'src'],
    'npm run build && npm run build:devstack',
  );
  return spawnCli(DEV_BIN, args, env, timeoutMs).result;
}

/** Runs a built tool (`bench/main`, `bench/profileRelay`, `chaos/main` under dist-tools/tools/) as `npm run` does. */
export function runTool(
  entry: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 600_000,
): Promise<CliResult> {
  const built = path.join(REPO_ROOT, 'dist-tools', 'tools', `${entry}.js`);
  assertBuilt(
    built,
    ['tools', 'devstack', 'src'],
    'npm run build && npm run build:devstack && npm run build:tools',
  );
  return spawnCli(built, args, env, timeoutMs).result;
}

/** As runCli, with the child process at hand (to signal it); SIGKILLed after `timeoutMs` (code null then). */
export function startCli(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 600_000,
): { child: ChildProcess; result: Promise<CliResult> } {
  assertBuilt(path.join(REPO_ROOT, 'dist', 'cli', 'main.js'), ['src'], 'npm run build');
  return spawnCli(BIN, args, env, timeoutMs);
}

/** Newest modification time (ms) of the .ts files under `dir`. */
function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    newest = Math.max(newest, fs.statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/**
 * The built entry exists and is newer than every source file it is built from: a stale build would test
 * yesterday's code (and once ran a dev stack command the sources had since taken out of the relay's CLI).
 */
export function assertBuilt(entry: string, sourceDirs: readonly string[], build: string): void {
  if (!fs.existsSync(entry))
    throw new Error(
      `${path.relative(REPO_ROOT, entry)} is missing: run \`${build}\` (npm test does it in pretest)`,
    );
  const newest = Math.max(...sourceDirs.map((d) => newestSource(path.join(REPO_ROOT, d))));
  if (newest > fs.statSync(entry).mtimeMs) {
    throw new Error(
      `${path.relative(REPO_ROOT, entry)} is older than ${sourceDirs.join('/ and ')}/: run \`${build}\` (npm test does it in pretest)`,
    );
  }
}

function spawnCli(
  bin: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): { child: ChildProcess; result: Promise<CliResult> } {
  const child = spawn(process.execPath, [bin, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const result = new Promise<CliResult>((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
  return { child, result };
}

export { freePort } from '../../devstack/ports';

/** The environment a CLI child process gets: the test services, LOG_LEVEL warn, then `extra`. */
export function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const s = testServices();
  return {
    ...process.env,
    KAFKA_BROKERS: s.kafkaBrokers.join(','),
    TEMPORAL_ADDRESS: s.temporalAddress,
    LOG_LEVEL: 'warn',
    ...extra,
  };
}
