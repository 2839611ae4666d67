/**
 * A service of the local stack that exits during start-up is started once more, with the end of its log in the
 * progress output; a second exit fails the start with one error that carries that log's end. Real child
 * processes (node), no fake: the stack sees them exit exactly as it sees a crashed Temporal server.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadStackConfig } from '../../devstack/config';
import { livePid, startDaemon, stopDaemon } from '../../devstack/stack/processes';
import type { Service } from '../../devstack/stack/services';
import { StackBase, logTail } from '../../devstack/stack/stack';

/** A service running `node -e script`; `exitsFirst` starts exit at once with a line in the log. */
function nodeService(
  dir: string,
  exitsFirst: number,
  delays: { exitAfterMs?: number; readyAfterMs?: number } = {},
): Service & { starts: number } {
  const logFile = path.join(dir, 'svc.log');
  const pidFile = path.join(dir, 'svc.pid');
  const svc = {
    name: 'svc',
    address: '127.0.0.1:1',
    pidFile,
    logFile,
    starts: 0,
    async start() {
      svc.starts++;
      const script =
        svc.starts <= exitsFirst
          ? `setTimeout(() => { console.log('fatal: start ${svc.starts} could not bind'); process.exit(3) }, ${delays.exitAfterMs ?? 0})`
          : `setTimeout(() => console.log('serving'), ${delays.readyAfterMs ?? 0}); setInterval(() => {}, 1000)`;
      await startDaemon({
        cmd: process.execPath,
        args: ['-e', script, dir],
        cwd: dir,
        logFile,
        pidFile,
        marker: dir,
      });
    },
    // A line of its own: the log's "=== started" header quotes the script, 'serving' included.
    isReady: async () => fs.readFileSync(logFile, 'utf8').split('\n').includes('serving'),
    detail: () => 'test service',
  };
  return svc;
}

class OneServiceStack extends StackBase {
  readonly order = ['svc'] as const;
  constructor(
    readonly services: Record<string, Service>,
    private readonly dir: string,
    lines: string[],
    timeoutMs = 20_000,
  ) {
    super(loadStackConfig({ POIMEN_STATE_DIR: dir, POIMEN_STACK_START_TIMEOUT_MS: String(timeoutMs) }), (l) =>
      lines.push(l),
    );
  }
  get stateDir() {
    return this.dir;
  }
  async provision() {}
}

describe('a service that exits during start-up', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stack-start-again-'));
  });
  afterEach(async () => {
    await stopDaemon(path.join(dir, 'svc.pid'), 'SIGKILL', 1000);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('is started again once, and the first exit shows in the progress with the end of its log', async () => {
    const lines: string[] = [];
    const svc = nodeService(dir, 1);
    await new OneServiceStack({ svc }, dir, lines).startService('svc');
    expect(svc.starts).toBe(2);
    expect(livePid(svc.pidFile)).toBeDefined();
    const said = lines.join('\n');
    expect(said).toMatch(/svc: exited during start-up; its log ends:\n[\s\S]*fatal: start 1 could not bind/);
    expect(said).toMatch(/svc: starting it again/);
    expect(said).toMatch(/svc: ready in/);
  });

  test('a first exit late in the wait leaves the second start the whole timeout', async () => {
    const lines: string[] = [];
    // Exits after 2.5 s of a 4 s timeout; the second start is ready 2.5 s later, 5 s after the first began.
    const svc = nodeService(dir, 1, { exitAfterMs: 2500, readyAfterMs: 2500 });
    await new OneServiceStack({ svc }, dir, lines, 4000).startService('svc');
    expect(svc.starts).toBe(2);
    expect(lines.join('\n')).toMatch(/svc: ready in/);
  });

  test('exiting on the second start too fails with one error carrying the end of its log', async () => {
    const lines: string[] = [];
    const svc = nodeService(dir, 2);
    const start = new OneServiceStack({ svc }, dir, lines).startService('svc');
    await expect(start).rejects.toThrow(
      /svc: exited during start-up; its log \(.*svc\.log\) ends:\n[\s\S]*fatal: start 2 could not bind/,
    );
    expect(svc.starts).toBe(2);
  });
});

describe('logTail', () => {
  test('gives the last lines of a log, and says so when there is none', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'log-tail-'));
    const file = path.join(dir, 'x.log');
    fs.writeFileSync(
      file,
      `${'x'.repeat(40_000)}\n${Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\n')}\n`,
    );
    const tail = logTail(file, 3);
    expect(tail).toBe('line 27\nline 28\nline 29');
    expect(logTail(path.join(dir, 'missing.log'))).toBe('(no log)');
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('startDaemon', () => {
  test('resolves only once the child shows the marker on its command line: a check right after never finds it gone', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-daemon-'));
    const pidFile = path.join(dir, 'd.pid');
    try {
      for (let i = 0; i < 20; i++) {
        const pid = await startDaemon({
          cmd: process.execPath,
          args: ['-e', 'setInterval(() => {}, 1000)', dir],
          cwd: dir,
          logFile: path.join(dir, 'd.log'),
          pidFile,
          marker: dir,
        });
        expect(livePid(pidFile)).toBe(pid);
        await stopDaemon(pidFile, 'SIGKILL', 1000);
      }
    } finally {
      await stopDaemon(pidFile, 'SIGKILL', 1000);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('resolves when the child exits before showing the marker', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-daemon-'));
    const started = Date.now();
    await startDaemon({
      cmd: process.execPath,
      args: ['-e', 'process.exit(3)'],
      cwd: dir,
      logFile: path.join(dir, 'd.log'),
      pidFile: path.join(dir, 'd.pid'),
      marker: dir,
    });
    expect(Date.now() - started).toBeLessThan(5_000);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
