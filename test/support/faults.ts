/**
 * Stop and restart the real Kafka broker or Temporal server in the middle of a test. Works on the local stack
 * (pid files) and on testcontainers (docker stop/start); services given by KAFKA_BROKERS/TEMPORAL_ADDRESS are
 * not ours to break, and a fault test says so instead of passing vacuously.
 */
import { execFileSync } from 'node:child_process';
import { loadStackConfig } from '../../devstack/config';
import type { ServiceName } from '../../devstack/stack/services';
import { livePid } from '../../devstack/stack/processes';
import { LocalStack } from '../../devstack/stack/stack';
import { testServices } from './testEnv';

function localStack(): LocalStack {
  return new LocalStack(loadStackConfig());
}

function containerId(name: ServiceName): string {
  const entry = (process.env.POIMEN_TEST_CONTAINERS ?? '').split(',').find((e) => e.startsWith(`${name}=`));
  if (!entry) throw new Error(`no container recorded for ${name}`);
  return entry.slice(name.length + 1);
}

function requireControl(): void {
  if (testServices().mode === 'external') {
    throw new Error(
      'fault tests need services this test run controls (local stack or testcontainers), not KAFKA_BROKERS/TEMPORAL_ADDRESS',
    );
  }
}

/** SIGTERM is a clean shutdown; SIGKILL a crash. */
export async function stopService(name: ServiceName, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  requireControl();
  if (testServices().mode === 'testcontainers') {
    execFileSync('docker', signal === 'SIGKILL' ? ['kill', containerId(name)] : ['stop', containerId(name)]);
    return;
  }
  if (!(await localStack().stopService(name, signal))) throw new Error(`${name} was not running`);
}

/** Starts the service again and waits until its real client says it is ready. */
export async function startService(name: ServiceName): Promise<void> {
  requireControl();
  if (testServices().mode === 'testcontainers') {
    execFileSync('docker', ['start', containerId(name)]);
    return;
  }
  await localStack().startService(name);
}

/**
 * Freezes the service (SIGSTOP; `docker pause`): it keeps its sockets open and answers nothing, as a broker in
 * a long GC pause or behind a black-holed network does. `resumeService` thaws it.
 */
export function pauseService(name: ServiceName): void {
  signalService(name, 'SIGSTOP', 'pause');
}

export function resumeService(name: ServiceName): void {
  signalService(name, 'SIGCONT', 'unpause');
}

function signalService(name: ServiceName, signal: NodeJS.Signals, dockerVerb: string): void {
  requireControl();
  if (testServices().mode === 'testcontainers') {
    execFileSync('docker', [dockerVerb, containerId(name)]);
    return;
  }
  const pid = livePid(localStack().services[name].pidFile);
  if (pid === undefined) throw new Error(`${name} is not running`);
  // The daemon leads its own process group (see stopDaemon).
  process.kill(-pid, signal);
}
