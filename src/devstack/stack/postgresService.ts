/**
 * The cluster profile's PostgreSQL: a private cluster (initdb once) on its own port, Temporal's persistence and
 * visibility store. Started as a daemon like every other service, so `stack down` and the tests' crash helpers
 * treat it alike. PostgreSQL refuses to run as root: as root it runs as the `postgres` user, with its data in a
 * folder that user can reach (the state folder may sit under root's home, mode 700).
 */
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { StackConfig } from '../../config';
import { StackError } from '../../errors';
import { ensureDir } from './provision';
import { requirePostgres } from './provisionCluster';
import { startDaemon } from './processes';
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

/** The data folder: in the state folder, or for root under /var/tmp, named after the state folder. */
export function postgresDataDir(cfg: StackConfig): string {
  if (process.getuid?.() !== 0) return path.join(clusterPaths(cfg).root, 'postgres', 'data');
  const tag = crypto.createHash('sha256').update(cfg.stateDir).digest('hex').slice(0, 12);
  return path.join('/var/tmp', `poimen-relay-pg-${tag}`, 'data');
}

export function postgresService(cfg: StackConfig): Service {
  const p = clusterPaths(cfg);
  const port = cfg.cluster.postgresPort;
  const address = `127.0.0.1:${port}`;
  const pidFile = path.join(p.runDir, 'postgres.pid');
  const logFile = path.join(p.logsDir, 'postgres.log');
  const dataDir = postgresDataDir(cfg);

  const asPostgres = (user: PgUser | undefined) => (user ? { uid: user.uid, gid: user.gid } : {});

  return {
    name: 'postgres',
    address,
    pidFile,
    logFile,
    detail: () => `${address}, data ${dataDir}`,
    async start() {
      const bin = requirePostgres();
      const user = postgresUser();
      ensureDir(p.logsDir);
      ensureDir(p.runDir);
      if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
        fs.rmSync(dataDir, { recursive: true, force: true });
        ensureDir(dataDir);
        if (user) fs.chownSync(dataDir, user.uid, user.gid);
        fs.chmodSync(dataDir, 0o700);
        const res = spawnSync(
          path.join(bin, 'initdb'),
          ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'],
          { encoding: 'utf8', ...asPostgres(user) },
        );
        fs.appendFileSync(logFile, `${res.stdout ?? ''}${res.stderr ?? ''}`);
        if (res.status !== 0) throw new StackError(`postgres: initdb failed (see ${logFile})`);
      }
      startDaemon({
        cmd: path.join(bin, 'postgres'),
        args: [
          '-D',
          dataDir,
          '-p',
          String(port),
          '-k',
          dataDir,
          '-c',
          'listen_addresses=127.0.0.1',
          // Temporal's default pools: up to 20 connections per store per service, 4 services in one process.
          '-c',
          'max_connections=300',
        ],
        cwd: path.dirname(dataDir),
        logFile,
        pidFile,
        marker: dataDir,
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
