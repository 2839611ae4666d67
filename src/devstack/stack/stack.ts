/**
 * `stack up | down | status`: the local Kafka + Temporal dev server that development, the demo and the
 * tests run on. Up is idempotent (running services are left alone), down stops exactly the processes the
 * stack started, and status checks each service through its real client.
 */
import { Connection } from '@temporalio/client';
import type { StackConfig } from '../../config';
import { StackError } from '../../errors';
import { ensureSearchAttributes } from '../../temporal/searchAttributes';
import { waitUntil } from '../../poll';
import { portInUse, stopDaemon } from './processes';
import { type Progress, silentProgress } from './progress';
import { type Binaries, STACK_PLAN, provision } from './provision';
import {
  type Service,
  type ServiceName,
  isRunning,
  kafkaService,
  stackPaths,
  temporalService,
} from './services';

export interface ServiceStatus {
  name: ServiceName;
  address: string;
  detail: string;
  running: boolean;
  ready: boolean;
  log: string;
}

export class LocalStack {
  readonly services: Record<ServiceName, Service>;

  constructor(
    readonly cfg: StackConfig,
    private readonly progress: Progress = silentProgress,
  ) {
    this.services = { kafka: kafkaService(cfg), temporal: temporalService(cfg) };
  }

  get stateDir(): string {
    return stackPaths(this.cfg).root;
  }

  /** What the stack runs on: Kafka's jars and the temporal CLI, not tctl (the demo has no use for it). */
  provision(): Promise<Binaries> {
    return provision(this.cfg, this.progress, STACK_PLAN);
  }

  async up(): Promise<ServiceStatus[]> {
    await this.provision();
    for (const service of Object.values(this.services)) await this.startService(service.name);
    return this.status();
  }

  async startService(name: ServiceName): Promise<void> {
    const service = this.services[name];
    if (isRunning(service)) {
      if (await waitUntil(() => service.isReady(), this.cfg.startTimeoutMs, 250)) {
        this.progress(`${name}: already running at ${service.address}`);
        await this.afterReady(name);
        return;
      }
      throw new StackError(
        `${name}: running but not ready at ${service.address} within ${this.cfg.startTimeoutMs} ms (log ${service.logFile})`,
      );
    }
    const port = Number(service.address.split(':').pop());
    if (await portInUse(port)) {
      throw new StackError(
        `${name}: port ${port} is already in use by a process this stack did not start; stop it or choose another port (POIMEN_STACK_*_PORT)`,
      );
    }
    this.progress(`${name}: starting on ${service.address} (log ${service.logFile})`);
    const started = Date.now();
    await service.start();
    const ready = await waitUntil(
      async () => {
        if (!isRunning(service))
          throw new StackError(`${name}: exited during start-up (log ${service.logFile})`);
        return service.isReady();
      },
      this.cfg.startTimeoutMs,
      250,
    );
    if (!ready)
      throw new StackError(
        `${name}: not ready within ${this.cfg.startTimeoutMs} ms (log ${service.logFile})`,
      );
    await this.afterReady(name);
    this.progress(`${name}: ready in ${((Date.now() - started) / 1000).toFixed(1)} s — ${service.detail()}`);
  }

  private async afterReady(name: ServiceName): Promise<void> {
    if (name !== 'temporal') return;
    const connection = await Connection.connect({ address: this.services.temporal.address });
    try {
      const added = await ensureSearchAttributes(connection, this.cfg.namespace);
      if (added.length > 0) this.progress(`temporal: registered search attributes ${added.join(', ')}`);
    } finally {
      await connection.close();
    }
  }

  /** Stops one service; SIGKILL simulates a crash, SIGTERM a clean shutdown. */
  async stopService(name: ServiceName, signal: NodeJS.Signals = 'SIGTERM'): Promise<boolean> {
    const service = this.services[name];
    const stopped = await stopDaemon(service.pidFile, signal);
    if (stopped) this.progress(`${name}: stopped (${signal})`);
    return stopped;
  }

  async down(): Promise<void> {
    // Reverse order of start.
    for (const name of ['temporal', 'kafka'] as const) {
      if (!(await this.stopService(name))) this.progress(`${name}: not running`);
    }
  }

  async status(): Promise<ServiceStatus[]> {
    return Promise.all(
      Object.values(this.services).map(async (s) => {
        const running = isRunning(s);
        return {
          name: s.name,
          address: s.address,
          detail: s.detail(),
          running,
          ready: running && (await s.isReady()),
          log: s.logFile,
        };
      }),
    );
  }
}
