/**
 * The integration project's jest environment: Node's, pointed at this worker's own local stack
 * (test/support/workerStack.ts). It runs in the worker process itself, outside the test's sandbox, so it sets the
 * worker's real environment too: a child process a test spawns without an explicit env (a relay, a CLI, the Java
 * producer) reaches the same stack as the test. Only on the local stack: services given by KAFKA_BROKERS and
 * TEMPORAL_ADDRESS, or testcontainers', are one set, and jest.config.js runs one file at a time on them.
 */
import { TestEnvironment } from 'jest-environment-node';
import { loadStackConfig } from '../../devstack/config';
import { consoleProgress } from '../../devstack/stack/progress';
import { LocalStack } from '../../devstack/stack/stack';
import { jestWorker, workerStackEnv } from './workerStack';

/** Set once a worker's environment points at its stack, so its next file does not move it again. */
const APPLIED = 'POIMEN_TEST_WORKER_STACK';

export default class StackEnvironment extends TestEnvironment {
  private readonly stack: LocalStack | undefined;

  constructor(...args: ConstructorParameters<typeof TestEnvironment>) {
    super(...args);
    const worker = jestWorker();
    if (process.env.POIMEN_TEST_STACK_MODE !== 'local' || worker === 1) return;
    if (process.env[APPLIED] !== String(worker)) {
      Object.assign(process.env, workerStackEnv(loadStackConfig(process.env), worker), {
        [APPLIED]: String(worker),
      });
    }
    const cfg = loadStackConfig(process.env);
    this.stack = new LocalStack(cfg, consoleProgress(`tests worker ${worker}`));
    process.env.KAFKA_BROKERS = this.stack.services.kafka.address;
    process.env.TEMPORAL_ADDRESS = this.stack.services.temporal.address;
    // A Web UI URL given for the base stack is worker 1's; this worker's UI is its own stack's.
    process.env.POIMEN_TEST_TEMPORAL_UI_URL = `http://127.0.0.1:${cfg.temporalUiPort}`;
    // The sandbox's process.env is a copy, taken before the lines above.
    Object.assign(this.global.process.env, process.env);
  }

  override async setup(): Promise<void> {
    await super.setup();
    // Starts what is not running; a running stack only answers its readiness checks.
    await this.stack?.up();
  }
}
