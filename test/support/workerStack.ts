/**
 * One local stack per jest worker: integration files run side by side, each on its own broker and dev server, so a
 * fault test's broker restart never lands in a neighbour's middle and no topic, group or workflow id is shared.
 * Worker 1 runs on the stack the global setup brought up (or the developer's own); worker N ≥ 2 on a stack of its
 * own, in `<state dir>/test-stacks/worker-N` with every port moved up by WORKER_PORT_STEP × (N − 1), started by
 * its first file (test/support/stackEnvironment.ts) and stopped by the global teardown. Owner of that layout.
 */
import fs from 'node:fs';
import path from 'node:path';
import { type StackConfig, loadStackConfig } from '../../devstack/config';
import { STACK } from '../../devstack/envTable';
import type { Progress } from '../../devstack/stack/progress';
import { LocalStack } from '../../devstack/stack/stack';

/** Ports of worker N are the base stack's plus this × (N − 1): five ports each, well apart. */
export const WORKER_PORT_STEP = 10;
/** A worker's stack starts while the other workers' files run on the same cores: it may take this long at least. */
export const WORKER_START_TIMEOUT_MS = 180_000;

/** The stack variables that put worker `worker`'s stack beside the base one ({} for worker 1: the base stack). */
export function workerStackEnv(base: StackConfig, worker: number): Record<string, string> {
  if (!Number.isInteger(worker) || worker < 1)
    throw new Error(`jest worker id must be 1 or more, got ${worker}`);
  if (worker === 1) return {};
  const shift = (p: number) => String(p + WORKER_PORT_STEP * (worker - 1));
  return {
    [STACK.POIMEN_STATE_DIR.name]: path.join(base.stateDir, 'test-stacks', `worker-${worker}`),
    [STACK.POIMEN_STACK_KAFKA_PORT.name]: shift(base.kafkaPort),
    [STACK.POIMEN_STACK_KAFKA_CONTROLLER_PORT.name]: shift(base.kafkaControllerPort),
    [STACK.POIMEN_STACK_TEMPORAL_PORT.name]: shift(base.temporalPort),
    [STACK.POIMEN_STACK_TEMPORAL_UI_PORT.name]: shift(base.temporalUiPort),
    [STACK.POIMEN_STACK_TEMPORAL_METRICS_PORT.name]: shift(base.temporalMetricsPort),
    [STACK.POIMEN_STACK_START_TIMEOUT_MS.name]: String(
      Math.max(base.startTimeoutMs, WORKER_START_TIMEOUT_MS),
    ),
  };
}

/** Worker `worker`'s stack, from the environment the base stack is configured by (the global teardown's). */
export function workerStack(env: NodeJS.ProcessEnv, worker: number, progress?: Progress): LocalStack {
  return new LocalStack(
    loadStackConfig({ ...env, ...workerStackEnv(loadStackConfig(env), worker) }),
    progress,
  );
}

/** Every worker stack (N ≥ 2) with a folder under the base stack's state folder, running or not. */
export function workerStacks(env: NodeJS.ProcessEnv, progress?: (worker: number) => Progress): LocalStack[] {
  const dir = path.join(loadStackConfig(env).stateDir, 'test-stacks');
  const workers = fs.existsSync(dir)
    ? fs
        .readdirSync(dir)
        .flatMap((d) => (/^worker-[0-9]+$/.test(d) ? [Number(d.slice('worker-'.length))] : []))
    : [];
  return workers.filter((w) => w >= 2).map((w) => workerStack(env, w, progress?.(w)));
}

/** The jest worker this code runs in: JEST_WORKER_ID, 1 when jest runs in band. */
export function jestWorker(env: NodeJS.ProcessEnv = process.env): number {
  return Number(env.JEST_WORKER_ID ?? '1');
}
