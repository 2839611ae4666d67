/**
 * What the cluster profile runs on beyond the dev profile's Kafka jars: the real Temporal server and its
 * temporal-sql-tool (built from the Go module proxy, with the PostgreSQL schema files copied out of the module
 * into the cache) and PostgreSQL's binaries from the host's Debian package.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { type StackConfig, childEnv } from '../config';
import { StackError } from 'poimen-relay/internal/errors';
import type { Progress } from './progress';
import { GO_ENV, ensureDir, ensureGoBinaries, ensureKafka } from './provision';
import { requireTool } from './tools';

const SERVER_MODULE = 'go.temporal.io/server';
/** The Web UI the temporal CLI v1.5.1 embeds; its module has no replace directives, so it builds from the proxy. */
const UI_MODULE = 'github.com/temporalio/ui-server/v2';
const UI_VERSION = 'v2.42.1';

export interface ClusterBinaries {
  kafkaLibsDir: string;
  temporalServer: string;
  sqlTool: string;
  /** `schema/postgresql/v12` of the server module: `temporal/versioned` and `visibility/versioned`. */
  schemaDir: string;
  postgresBinDir: string;
  uiServer: string;
}

function serverCacheDir(cfg: StackConfig): string {
  return path.join(cfg.cacheDir, 'temporal-server', cfg.cluster.temporalServerVersion);
}

export function clusterBinaryPaths(cfg: StackConfig) {
  const dir = serverCacheDir(cfg);
  return {
    temporalServer: path.join(dir, 'temporal-server'),
    sqlTool: path.join(dir, 'temporal-sql-tool'),
    schemaDir: path.join(dir, 'schema', 'postgresql', 'v12'),
    uiServer: path.join(cfg.cacheDir, 'temporal-ui', UI_VERSION, 'ui-server'),
  };
}

/** Debian installs the server binaries under /usr/lib/postgresql/<major>/bin, off PATH; the newest major wins. */
export function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  const majors = fs.existsSync(root)
    ? fs
        .readdirSync(root)
        .filter((d) => /^\d+$/.test(d))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const major of majors) {
    const bin = path.join(root, major, 'bin');
    if (fs.existsSync(path.join(bin, 'postgres'))) return bin;
  }
  const which = spawnSync('sh', ['-c', 'command -v postgres'], { encoding: 'utf8' });
  const found = which.status === 0 ? which.stdout.trim() : '';
  return found ? path.dirname(fs.realpathSync(found)) : undefined;
}

export function requirePostgres(): string {
  const bin = postgresBinDir();
  if (!bin || !fs.existsSync(path.join(bin, 'initdb')) || !fs.existsSync(path.join(bin, 'pg_isready'))) {
    throw new StackError(
      'PostgreSQL is missing: the cluster profile needs its server binaries. Install it with: apt-get install -y postgresql',
    );
  }
  return bin;
}

/** The schema files ship inside the server module; copied next to the binaries so the Go module cache may go. */
function copySchema(cfg: StackConfig, target: string): void {
  if (fs.existsSync(path.join(target, 'temporal', 'versioned'))) return;
  const res = spawnSync(
    'go',
    ['mod', 'download', '-json', `${SERVER_MODULE}@${cfg.cluster.temporalServerVersion}`],
    { encoding: 'utf8', env: childEnv(GO_ENV), cwd: ensureDir(path.join(cfg.cacheDir, 'tmp')) },
  );
  const dir = !res.error && res.status === 0 ? (JSON.parse(res.stdout) as { Dir?: string }).Dir : undefined;
  const source = dir && path.join(dir, 'schema', 'postgresql', 'v12');
  if (!source || !fs.existsSync(source)) {
    throw new StackError(
      `could not find the PostgreSQL schema of ${SERVER_MODULE}@${cfg.cluster.temporalServerVersion} (go mod download: ${res.error?.message ?? (res.stderr ?? '').trim().split('\n').pop() ?? ''})`,
    );
  }
  const work = `${target}.tmp-${process.pid}`;
  fs.rmSync(work, { recursive: true, force: true });
  fs.cpSync(source, work, { recursive: true });
  // The module cache is read-only; the copy must be removable by a later `rm -rf` of the cache.
  spawnSync('chmod', ['-R', 'u+w', work]);
  fs.renameSync(work, target);
}

export async function provisionCluster(cfg: StackConfig, progress: Progress): Promise<ClusterBinaries> {
  const postgres = requirePostgres();
  const paths = clusterBinaryPaths(cfg);
  requireTool('java');
  // The schema too: it is copied out of the Go module cache (`go mod download`).
  const built = [paths.temporalServer, paths.sqlTool, paths.uiServer, path.join(paths.schemaDir, 'temporal')];
  if (!built.every((f) => fs.existsSync(f))) requireTool('go');
  const kafkaLibsDir = await ensureKafka(cfg, progress);
  const [temporalServer, sqlTool] = await ensureGoBinaries(
    cfg,
    progress,
    'temporal-server',
    [`${SERVER_MODULE}/cmd/server`, `${SERVER_MODULE}/cmd/tools/sql`],
    cfg.cluster.temporalServerVersion,
    [paths.temporalServer, paths.sqlTool],
  );
  copySchema(cfg, paths.schemaDir);
  const [uiServer] = await ensureGoBinaries(
    cfg,
    progress,
    'temporal-ui',
    [`${UI_MODULE}/cmd/server`],
    UI_VERSION,
    [paths.uiServer],
  );
  progress(`postgresql: ${postgres}`);
  return {
    kafkaLibsDir,
    temporalServer: temporalServer as string,
    sqlTool: sqlTool as string,
    schemaDir: paths.schemaDir,
    postgresBinDir: postgres,
    uiServer: uiServer as string,
  };
}
