/**
 * The operator's tools against the test run's Temporal: the Web UI address, the `temporal` CLI and `tctl`
 * binaries from the local stack's cache, run as an operator would run them.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { Connection } from '@temporalio/client';
import Long from 'long';
import { loadStackConfig } from '../../devstack/config';
import { consoleProgress } from '../../devstack/stack/progress';
import { ensureTctl, tctlBinPath, temporalBinPath } from '../../devstack/stack/provision';
import { uniqueName } from './names';
import { testServices } from './testEnv';
import { waitFor } from './wait';

/**
 * The Web UI of the Temporal the tests run on: `POIMEN_TEST_TEMPORAL_UI_URL` when set, else the local stack's
 * rule, gRPC port + 1000 on the same host (7233 → 8233).
 */
export function temporalUiUrl(): string {
  const explicit = process.env.POIMEN_TEST_TEMPORAL_UI_URL;
  if (explicit) return explicit.replace(/\/+$/, '');
  const address = testServices().temporalAddress;
  const sep = address.lastIndexOf(':');
  const host = address.slice(0, sep);
  const port = Number(address.slice(sep + 1));
  if (!host || !Number.isInteger(port)) {
    throw new Error(
      `cannot derive the Web UI from TEMPORAL_ADDRESS=${address}; set POIMEN_TEST_TEMPORAL_UI_URL`,
    );
  }
  return `http://${host}:${port + 1000}`;
}

export function temporalCliPath(): string {
  return temporalBinPath(loadStackConfig());
}

export function tctlPath(): string {
  return tctlBinPath(loadStackConfig());
}

/** A first build of tctl took 15m 44s here on a loaded 2-core machine (it prints its progress every 10 s). */
export const TCTL_BUILD_TIMEOUT_MS = 30 * 60_000;

/** tctl is built for this suite only, not with the stack: the demo and the other suites never wait for it. */
export async function provisionTctl(): Promise<void> {
  await ensureTctl(loadStackConfig(), consoleProgress('tctl'));
}

export interface ToolResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runTool(bin: string, args: string[], timeoutMs: number): Promise<ToolResult> {
  if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: provision the local stack (stack up)`);
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function expectSuccess(what: string, args: string[], r: ToolResult): ToolResult {
  if (r.code !== 0) {
    throw new Error(`${what} ${args.join(' ')} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  }
  return r;
}

/** `temporal <args> --address … --namespace …`; throws with its output when it exits non-zero. */
export async function temporalCli(args: string[], timeoutMs = 60_000): Promise<ToolResult> {
  const services = testServices();
  const full = [
    ...args,
    '--address',
    services.temporalAddress,
    '--namespace',
    services.namespace,
    '--color',
    'never',
  ];
  return expectSuccess('temporal', full, await runTool(temporalCliPath(), full, timeoutMs));
}

/** `tctl --address … --namespace … <args>`; throws with its output when it exits non-zero. */
export async function tctl(args: string[], timeoutMs = 60_000): Promise<ToolResult> {
  const services = testServices();
  const full = ['--address', services.temporalAddress, '--namespace', services.namespace, ...args];
  return expectSuccess('tctl', full, await runTool(tctlPath(), full, timeoutMs));
}

/**
 * A fresh namespace on the test run's Temporal with none of the relay's search attributes (a day's retention),
 * once Temporal serves it: what an operator has before `poimen-relay temporal setup`.
 */
export async function bareNamespace(prefix: string): Promise<string> {
  const namespace = uniqueName(prefix);
  const connection = await Connection.connect({ address: testServices().temporalAddress });
  try {
    await connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: { seconds: Long.fromNumber(86400) },
    });
    await waitFor(() => connection.workflowService.describeNamespace({ namespace }).then(() => true), {
      what: `namespace ${namespace}`,
    });
  } finally {
    await connection.close();
  }
  return namespace;
}
