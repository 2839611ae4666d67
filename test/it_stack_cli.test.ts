/**
 * The dev entry's `stack up | down | status` (devstack/bin/poimen-dev.js) as a developer runs it, on a second,
 * private stack instance (own state folder, own ports) so the shared stack the other suites use is never touched.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, runDevCli } from './support/cli';

function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

function pids(stateDir: string): number[] {
  return ['kafka', 'temporal'].map((s) => {
    const rec = JSON.parse(fs.readFileSync(path.join(stateDir, 'run', `${s}.pid`), 'utf8')) as {
      pid: number;
    };
    return rec.pid;
  });
}

describe('stack command', () => {
  let stateDir: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-stack-cli-'));
    const temporalPort = await freePort();
    env = {
      ...process.env,
      POIMEN_STATE_DIR: stateDir,
      POIMEN_STACK_KAFKA_PORT: String(await freePort()),
      POIMEN_STACK_KAFKA_CONTROLLER_PORT: String(await freePort()),
      POIMEN_STACK_TEMPORAL_PORT: String(temporalPort),
      POIMEN_STACK_TEMPORAL_UI_PORT: String(await freePort()),
      POIMEN_STACK_TEMPORAL_METRICS_PORT: String(await freePort()),
    };
  });

  afterAll(async () => {
    await runDevCli(['stack', 'down'], env);
    fs.rmSync(stateDir, { recursive: true, force: true });
  });

  test('stack up twice in a row is harmless: same processes, both ready', async () => {
    const first = await runDevCli(['stack', 'up'], env);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/kafka\s+ready/);
    expect(first.stdout).toMatch(/temporal\s+ready/);
    const before = pids(stateDir);

    // --json: stdout is only the endpoints and the services' status, the same shape as `stack status --json`.
    const second = await runDevCli(['stack', 'up', '--json'], env);
    expect(second.code).toBe(0);
    expect(second.stderr).toContain('kafka: already running');
    expect(second.stderr).toContain('temporal: already running');
    type StatusJson = {
      profile: string;
      kafka: { bootstrap: string };
      temporal: { address: string };
      services: { name: string; ready: boolean; address: string }[];
    };
    const up = JSON.parse(second.stdout) as StatusJson;
    expect(up.profile).toBe('dev');
    expect(up.kafka.bootstrap).toBe(`127.0.0.1:${env.POIMEN_STACK_KAFKA_PORT}`);
    expect(up.temporal.address).toBe(`127.0.0.1:${env.POIMEN_STACK_TEMPORAL_PORT}`);
    expect(up.services.map((s) => [s.name, s.ready, s.address])).toEqual([
      ['kafka', true, `127.0.0.1:${env.POIMEN_STACK_KAFKA_PORT}`],
      ['temporal', true, `127.0.0.1:${env.POIMEN_STACK_TEMPORAL_PORT}`],
    ]);
    const status = JSON.parse((await runDevCli(['stack', 'status', '--json'], env)).stdout) as StatusJson;
    expect(status).toEqual(up);
    expect(pids(stateDir)).toEqual(before);
    expect(before.every(alive)).toBe(true);
  });

  test('stack status reports each service and its address, and exits 0 when all are ready', async () => {
    const status = await runDevCli(['stack', 'status'], env);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`bootstrap 127.0.0.1:${env.POIMEN_STACK_KAFKA_PORT}`);
    expect(status.stdout).toContain(`Web UI http://127.0.0.1:${env.POIMEN_STACK_TEMPORAL_UI_PORT}`);
  });

  test('stack status exits non-zero when a service is down', async () => {
    const [kafkaPid] = pids(stateDir);
    process.kill(kafkaPid!, 'SIGKILL');
    const status = await runDevCli(['stack', 'status'], env);
    expect(status.code).not.toBe(0);
    expect(status.stdout).toMatch(/kafka\s+down/);
    expect(status.stdout).toMatch(/temporal\s+ready/);
  });

  test('stack down leaves no process of the stack running', async () => {
    const up = await runDevCli(['stack', 'up'], env);
    expect(up.code).toBe(0);
    const started = pids(stateDir);
    expect(started.every(alive)).toBe(true);

    const down = await runDevCli(['stack', 'down'], env);
    expect(down.code).toBe(0);
    expect(started.filter(alive)).toEqual([]);
    // Nothing else that carries this stack's state folder on its command line is left either.
    const leftovers = fs
      .readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        try {
          return fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(stateDir);
        } catch {
          return false;
        }
      });
    expect(leftovers).toEqual([]);
    const status = await runDevCli(['stack', 'status'], env);
    expect(status.code).not.toBe(0);
  });

  test('a missing host tool stops provisioning with one line naming it and its Debian package', async () => {
    const emptyCache = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-empty-cache-'));
    const nodeOnly = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-path-'));
    fs.symlinkSync(process.execPath, path.join(nodeOnly, 'node'));
    try {
      const res = await runDevCli(['stack', 'up'], { ...env, POIMEN_CACHE_DIR: emptyCache, PATH: nodeOnly });
      expect(res.code).toBe(2);
      const lines = res.stderr
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('poimen-dev:'));
      expect(lines).toEqual([
        expect.stringMatching(/java is missing.*apt-get install -y openjdk-17-jdk-headless/),
      ]);
    } finally {
      fs.rmSync(emptyCache, { recursive: true, force: true });
      fs.rmSync(nodeOnly, { recursive: true, force: true });
    }
  });
});
