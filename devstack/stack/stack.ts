/**
 * `stack up | down | status`: the local services that development, the demo and the tests run on, in two
 * profiles (profiles.ts). Up is idempotent (running services are left alone), down stops exactly the processes
 * the stack started, and status checks each service through its real client.
 */
import fs from 'node:fs';
import { Connection } from '@temporalio/client';
import type { StackConfig } from '../config';
import { StackError } from 'poimen-relay/internal/errors';
import { ensureSearchAttributes } from 'poimen-relay/internal/temporal/searchAttributes';
import { waitUntil } from 'poimen-relay/internal/poll';
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
  name: string;
  address: string;
  detail: string;
  running: boolean;
  ready: boolean;
  log: string;
}

/**
 * How often a service that exits during start-up is started: twice. Under a loaded machine the Temporal server
 * has exited once during start-up in CI, with its log lost with the runner; a second start is what a process
 * manager would do, and the first exit stays visible in the progress output with the end of its log.
 */
const START_ATTEMPTS = 2;
const LOG_TAIL_LINES = 20;
const LOG_TAIL_BYTES = 16 * 1024;

/** The last lines of a service's log, for an error that says why it exited. */
export function logTail(logFile: string, lines = LOG_TAIL_LINES): string {
  let text: string;
  try {
    const fd = fs.openSync(logFile, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const buf = Buffer.alloc(Math.min(size, LOG_TAIL_BYTES));
      fs.readSync(fd, buf, 0, buf.length, size - buf.length);
      text = buf.toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '(no log)';
  }
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** What both profiles share: starting (several at once where they need each other), stopping and reporting. */
export abstract class StackBase {
  abstract readonly services: Record<string, Service>;
  /** Start order; down stops in reverse. */
  protected abstract readonly order: readonly string[];

  constructor(
    readonly cfg: StackConfig,
    protected readonly progress: Progress = silentProgress,
  ) {}

  abstract get stateDir(): string;
  abstract provision(): Promise<unknown>;

  /** Hook after a service is ready (search attributes, namespaces). */
  protected async afterReady(_name: string): Promise<void> {}

  /** A service's clean-stop signal (PostgreSQL's fast shutdown is SIGINT). */
  protected stopSignal(_name: string): NodeJS.Signals {
    return 'SIGTERM';
  }

  protected service(name: string): Service {
    const service = this.services[name];
    if (!service)
      throw new StackError(`no service ${name}; this stack has ${Object.keys(this.services).join(', ')}`);
    return service;
  }

  async startService(name: string): Promise<void> {
    await this.startServices([name]);
  }

  /**
   * Starts the named services together, then waits for each: the nodes of a KRaft quorum are ready only once
   * a majority of them runs.
   */
  async startServices(names: readonly string[]): Promise<void> {
    const started = Date.now();
    const fresh: string[] = [];
    for (const name of names) {
      const service = this.service(name);
      if (isRunning(service)) continue;
      for (const port of [Number(service.address.split(':').pop()), ...(service.otherPorts ?? [])]) {
        if (!(await portInUse(port))) continue;
        throw new StackError(
          `${name}: port ${port} is already in use by a process this stack did not start; stop it or choose another port (POIMEN_STACK_*_PORT / POIMEN_CLUSTER_*_PORT)`,
        );
      }
      this.progress(`${name}: starting on ${service.address} (log ${service.logFile})`);
      fresh.push(name);
    }
    await Promise.all(fresh.map((name) => this.service(name).start()));
    for (const name of names) {
      const service = this.service(name);
      // Each start has the whole start timeout: a first exit late in its wait leaves the second its own.
      let ready = false;
      for (let attempt = 1; !ready; attempt++) {
        let exited = false;
        ready = await waitUntil(
          async () => {
            if (isRunning(service)) return service.isReady();
            exited = true;
            return true;
          },
          this.cfg.startTimeoutMs,
          250,
        );
        if (!ready) {
          throw new StackError(
            `${name}: ${fresh.includes(name) ? 'not' : 'running but not'} ready at ${service.address} within ${this.cfg.startTimeoutMs} ms (log ${service.logFile})`,
          );
        }
        if (!exited) break;
        ready = false;
        const tail = logTail(service.logFile);
        if (!fresh.includes(name) || attempt >= START_ATTEMPTS)
          throw new StackError(
            `${name}: exited during start-up; its log (${service.logFile}) ends:\n${tail}`,
          );
        this.progress(`${name}: exited during start-up; its log ends:\n${tail}\n${name}: starting it again`);
        await service.start();
      }
      await this.afterReady(name);
      this.progress(
        fresh.includes(name)
          ? `${name}: ready in ${((Date.now() - started) / 1000).toFixed(1)} s — ${service.detail()}`
          : `${name}: already running at ${service.address}`,
      );
    }
  }

  /** Stops one service; SIGKILL simulates a crash, the default a clean shutdown. */
  async stopService(name: string, signal?: NodeJS.Signals): Promise<boolean> {
    const sig = signal ?? this.stopSignal(name);
    const stopped = await stopDaemon(this.service(name).pidFile, sig);
    if (stopped) this.progress(`${name}: stopped (${sig})`);
    return stopped;
  }

  async down(): Promise<void> {
    for (const name of [...this.order].reverse()) {
      if (!(await this.stopService(name))) this.progress(`${name}: not running`);
    }
  }

  async status(): Promise<ServiceStatus[]> {
    return Promise.all(
      this.order.map(async (name) => {
        const s = this.service(name);
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

/** The dev profile: one Kafka broker and the temporal dev server. */
export class LocalStack extends StackBase {
  readonly services: Record<ServiceName, Service>;
  protected readonly order = ['kafka', 'temporal'] as const;

  constructor(cfg: StackConfig, progress: Progress = silentProgress) {
    super(cfg, progress);
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
    for (const name of this.order) await this.startService(name);
    return this.status();
  }

  protected override async afterReady(name: string): Promise<void> {
    if (name !== 'temporal') return;
    const connection = await Connection.connect({ address: this.services.temporal.address });
    try {
      const added = await ensureSearchAttributes(connection, this.cfg.namespace);
      if (added.length > 0) this.progress(`temporal: registered search attributes ${added.join(', ')}`);
    } finally {
      await connection.close();
    }
  }
}
