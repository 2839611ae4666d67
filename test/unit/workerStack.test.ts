/**
 * Each jest worker's local stack (test/support/workerStack.ts): its own state folder and ports, none shared with
 * worker 1's (the base stack) or another worker's, so files on two workers never meet on a broker or dev server.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadStackConfig } from '../../devstack/config';
import { jestWorker, workerStack, workerStackEnv, workerStacks } from '../support/workerStack';

const BASE_ENV = { POIMEN_STATE_DIR: '/tmp/poimen-state', POIMEN_STACK_TEMPORAL_PORT: '7233' };
const ports = (env: NodeJS.ProcessEnv) => {
  const c = loadStackConfig(env);
  return [c.kafkaPort, c.kafkaControllerPort, c.temporalPort, c.temporalUiPort, c.temporalMetricsPort];
};

describe('a jest worker’s stack', () => {
  test('worker 1 runs on the base stack, unchanged', () => {
    expect(workerStackEnv(loadStackConfig(BASE_ENV), 1)).toEqual({});
    expect(workerStack(BASE_ENV, 1).stateDir).toBe(loadStackConfig(BASE_ENV).stateDir);
  });

  test('worker N has its own state folder under the base one', () => {
    const w3 = loadStackConfig({ ...BASE_ENV, ...workerStackEnv(loadStackConfig(BASE_ENV), 3) });
    expect(w3.stateDir).toBe(path.join('/tmp/poimen-state', 'test-stacks', 'worker-3'));
    expect(workerStack(BASE_ENV, 3).stateDir).toBe(w3.stateDir);
    expect(w3.cacheDir).toBe(loadStackConfig(BASE_ENV).cacheDir);
  });

  test('no port is shared by two workers of four, the UI and metrics ports included', () => {
    const all = [1, 2, 3, 4].flatMap((w) =>
      ports({ ...BASE_ENV, ...workerStackEnv(loadStackConfig(BASE_ENV), w) }),
    );
    expect(all).toHaveLength(20);
    expect(new Set(all).size).toBe(20);
    // Worker 2's Kafka is where its env says, so the test and the stack it starts agree.
    const w2 = workerStack(BASE_ENV, 2);
    expect(w2.services.kafka.address).toBe('127.0.0.1:9102');
    expect(w2.services.temporal.address).toBe('127.0.0.1:7243');
  });

  test('moves from whatever ports the base stack was given', () => {
    const base = { ...BASE_ENV, POIMEN_STACK_KAFKA_PORT: '29592', POIMEN_STACK_TEMPORAL_UI_PORT: '30633' };
    const w2 = loadStackConfig({ ...base, ...workerStackEnv(loadStackConfig(base), 2) });
    expect([w2.kafkaPort, w2.temporalUiPort, w2.temporalMetricsPort]).toEqual([29602, 30643, 8244]);
  });

  test('a worker’s stack may take 3 min to start beside running files, or longer if the base may', () => {
    const w2 = (env: NodeJS.ProcessEnv) =>
      loadStackConfig({ ...env, ...workerStackEnv(loadStackConfig(env), 2) });
    expect(w2(BASE_ENV).startTimeoutMs).toBe(180_000);
    expect(w2({ ...BASE_ENV, POIMEN_STACK_START_TIMEOUT_MS: '400000' }).startTimeoutMs).toBe(400_000);
  });

  test('the teardown finds every worker stack with a folder, this run’s or an earlier one’s', () => {
    const state = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-worker-stacks-'));
    try {
      for (const d of ['worker-2', 'worker-4', 'worker-1', 'notes']) {
        fs.mkdirSync(path.join(state, 'test-stacks', d), { recursive: true });
      }
      const found = workerStacks({ POIMEN_STATE_DIR: state }).map((s) => s.stateDir);
      expect(found.sort()).toEqual(['worker-2', 'worker-4'].map((d) => path.join(state, 'test-stacks', d)));
      expect(workerStacks({ POIMEN_STATE_DIR: path.join(state, 'none') })).toEqual([]);
    } finally {
      fs.rmSync(state, { recursive: true, force: true });
    }
  });

  test('the worker is JEST_WORKER_ID, 1 in band; a bad id is refused', () => {
    expect(jestWorker({ JEST_WORKER_ID: '3' })).toBe(3);
    expect(jestWorker({})).toBe(1);
    expect(() => workerStackEnv(loadStackConfig(BASE_ENV), 0)).toThrow('jest worker id must be 1 or more');
  });
});
