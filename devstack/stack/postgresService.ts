/**
 * The cluster profile's PostgreSQL: a private cluster (initdb once) on its own port, Temporal's persistence and
 * visibility store. Started as a daemon like every other service, so `stack down` and the tests' crash helpers
 * treat it alike. PostgreSQL refuses to run as root: as root it runs as the `postgres` user, with its data in a
 * folder that user can reach (the state folder may sit under root's home, mode 700).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { type StackConfig, childEnv } from '../config';
import { StackError } from 'poimen-relay/internal/errors';
import { ensureDir } from './provision';
import { requirePostgres } from './provisionCluster';
import { clearLeftovers, livePostmaster, startDaemon } from './processes';
import type { Service } from './services';
import { clusterPaths } from './clusterPaths';

interface PgUser {
  uid: number;
  gid: number;
}

function postgresUser(): PgUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  const uid = id('-u');
  const gid = id('-g');
  if (uid.status !== 0 || gid.status !== 0) {
    throw new StackError(
      'PostgreSQL refuses to run as root and there is no `postgres` user to run it as. Install it with: apt-get install -y postgresql',
    );
  }
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/**
 * The data folder. Not root: in the state folder. Root: PostgreSQL runs as `postgres`, which cannot reach a state
 * folder under root's home (mode 700), so the data lives in a fresh /var/tmp folder (mkdtemp: not a predictable
 * path another user could make first) whose name the state folder records: a removed state folder forgets its
 * database with everything else, as the dev profile's SQLite file goes with it.
 */
export function postgresDataDir(cfg: StackConfig, create = false): string {
  const p = clusterPaths(cfg);
  if (process.getuid?.() !== 0) return path.join(p.root, 'postgres', 'data');
  const pointer = path.join(p.root, 'postgres-data-dir');
  if (fs.existsSync(pointer)) return fs.readFileSync(pointer, 'utf8').trim();
  if (!create) return path.join('/var/tmp', 'poimen-relay-pg-(not created yet)', 'data');
  const dir = fs.mkdtempSync(path.join('/var/tmp', 'poimen-relay-pg-'));
  ensureDir(p.root);
  fs.writeFileSync(`${pointer}.tmp`, path.join(dir, 'data'));
  fs.renameSync(`${pointer}.tmp`, pointer);
  return path.join(dir, 'data');
}

export function postgresService(cfg: StackConfig): Service {
  const p = clusterPaths(cfg);
  const port = cfg.cluster.postgresPort;
  const address = `127.0.0.1:${port}`;
  const pidFile = path.join(p.runDir, 'postgres.pid');
  const logFile = path.join(p.logsDir, 'postgres.log');
  const dataDir = () => postgresDataDir(cfg);
  /** Written after initdb succeeded: an initdb cut short leaves PG_VERSION behind and must run again. */
  const initialised = () => path.join(path.dirname(dataDir()), '.initdb-complete');

  const asPostgres = (user: PgUser | undefined) => (user ? { uid: user.uid, gid: user.gid } : {});

  return {
    name: 'postgres',
    address,
    pidFile,
    logFile,
    detail: () => `${address}, data ${dataDir()}`,
    async start() {
      const bin = requirePostgres();
      const user = postgresUser();
      ensureDir(p.logsDir);
      ensureDir(p.runDir);
      const data = postgresDataDir(cfg, true);
      if (!fs.existsSync(initialised())) {
        fs.rmSync(data, { recursive: true, force: true });
        const parent = path.dirname(data);
        ensureDir(parent);
        // Explicit modes: a umask of 077 would leave the parent closed to the postgres user.
        fs.chmodSync(parent, 0o711);
        ensureDir(data);
        if (user) fs.chownSync(data, user.uid, user.gid);
        fs.chmodSync(data, 0o700);
        const res = spawnSync(
          path.join(bin, 'initdb'),
          // No locale from the caller's environment (a forwarded LC_CTYPE the host lacks fails initdb).
          ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-sync'],
          { encoding: 'utf8', env: childEnv({ LC_ALL: 'C', LANG: 'C' }), ...asPostgres(user) },
        );
        fs.appendFileSync(
          logFile,
          `${res.stdout ?? ''}${res.stderr ?? ''}${res.error ? String(res.error) : ''}`,
        );
        if (res.status !== 0) throw new StackError(`postgres: initdb failed (see ${logFile})`);
        fs.writeFileSync(initialised(), new Date().toISOString());
      }
      // A postmaster of this data folder that the pid file does not know (another `stack up`, a lost pid file):
      // not ours to kill, and PostgreSQL would refuse a second one anyway.
      const running = livePostmaster(data);
      if (running !== undefined) {
        throw new StackError(
          `postgres: another PostgreSQL (pid ${running}) already serves ${data}; stop it or run: node devstack/bin/poimen-dev.js stack down --profile cluster`,
        );
      }
      // After a kill -9, the old backends first (processes.ts clearLeftovers).
      await clearLeftovers(data);
      await startDaemon({
        cmd: path.join(bin, 'postgres'),
        args: [
          '-D',
          data,
          '-p',
          String(port),
          // TCP only: a socket path under a deep state folder would exceed the 107-byte limit.
          '-c',
          'unix_socket_directories=',
          '-c',
          'listen_addresses=127.0.0.1',
          // Temporal's default pools: up to 20 connections per store per service, 4 services in one process.
          '-c',
          'max_connections=300',
        ],
        cwd: path.dirname(data),
        logFile,
        pidFile,
        marker: data,
        user,
      });
    },
    async isReady() {
      const bin = requirePostgres();
      const res = spawnSync(
        path.join(bin, 'pg_isready'),
        ['-h', '127.0.0.1', '-p', String(port), '-t', '2'],
        {
          stdio: 'ignore',
        },
      );
      return res.status === 0;
    },
  };
}
