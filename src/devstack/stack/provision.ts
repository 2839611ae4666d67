/**
 * Provisioning of the local stack's binaries, cached outside the repo ($POIMEN_CACHE_DIR) so every clone on
 * a machine shares them and a new machine rebuilds them. Each artifact is built into a temporary folder and
 * renamed into place only when complete, so an interrupted run never leaves a half-built cache behind.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { type StackConfig, childEnv } from '../../config';
import { StackError } from '../../errors';
import type { Progress } from './progress';
import { PACKAGE_ROOT } from '../../version';
import { requireTool } from './tools';

export interface Binaries {
  kafkaLibsDir: string;
  temporalBin: string;
  tctlBin: string;
}

export function kafkaLibsDir(cfg: StackConfig): string {
  return path.join(cfg.cacheDir, 'kafka', cfg.kafkaVersion, 'libs');
}

export function temporalBinPath(cfg: StackConfig): string {
  return path.join(cfg.cacheDir, 'bin', `temporal-${cfg.temporalCliVersion}`);
}

function run(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; logFile: string },
): Promise<void> {
  return new Promise((resolve, reject) => {
    const out = fs.openSync(opts.logFile, 'a');
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', out, out] });
    child.on('error', (err) => {
      fs.closeSync(out);
      reject(new StackError(`${cmd} could not be started: ${err.message}`));
    });
    child.on('exit', (code, signal) => {
      fs.closeSync(out);
      if (code === 0) resolve();
      else {
        const tail = fs.readFileSync(opts.logFile, 'utf8').split('\n').slice(-15).join('\n');
        reject(
          new StackError(
            `${cmd} ${args.join(' ')} failed (${signal ?? `exit ${code}`}); log ${opts.logFile}:\n${tail}`,
          ),
        );
      }
    });
  });
}

export async function ensureKafka(cfg: StackConfig, progress: Progress): Promise<string> {
  const libs = kafkaLibsDir(cfg);
  const done = path.join(path.dirname(libs), '.complete');
  if (fs.existsSync(done)) {
    progress(`kafka ${cfg.kafkaVersion}: cached in ${libs}`);
    return libs;
  }
  requireTool('java');
  requireTool('mvn');
  const work = fs.mkdtempSync(path.join(ensureDir(path.join(cfg.cacheDir, 'tmp')), 'kafka-'));
  const logFile = path.join(work, 'mvn.log');
  fs.copyFileSync(path.join(PACKAGE_ROOT, 'stack', 'kafka', 'pom.xml'), path.join(work, 'pom.xml'));
  progress(
    `kafka ${cfg.kafkaVersion}: resolving org.apache.kafka:kafka_2.13 and its runtime from Maven Central (log ${logFile})`,
  );
  await run(
    'mvn',
    [
      '-B',
      '-q',
      `-Dkafka.version=${cfg.kafkaVersion}`,
      'dependency:copy-dependencies',
      '-DincludeScope=runtime',
      `-DoutputDirectory=${path.join(work, 'libs')}`,
    ],
    { cwd: work, logFile },
  );
  const jars = fs.readdirSync(path.join(work, 'libs'));
  if (!jars.some((j) => j.startsWith(`kafka_2.13-${cfg.kafkaVersion}`))) {
    throw new StackError(`maven did not produce kafka_2.13-${cfg.kafkaVersion}.jar (see ${logFile})`);
  }
  const target = path.dirname(libs);
  fs.rmSync(target, { recursive: true, force: true });
  ensureDir(path.dirname(target));
  fs.renameSync(work, target);
  fs.writeFileSync(done, new Date().toISOString());
  progress(`kafka ${cfg.kafkaVersion}: ${jars.length} jars in ${libs}`);
  return libs;
}

async function ensureGoBinary(
  cfg: StackConfig,
  progress: Progress,
  name: string,
  pkg: string,
  version: string,
  target: string,
): Promise<string> {
  if (fs.existsSync(target)) {
    progress(`${name} ${version}: cached at ${target}`);
    return target;
  }
  requireTool('go');
  const work = fs.mkdtempSync(path.join(ensureDir(path.join(cfg.cacheDir, 'tmp')), `${name}-`));
  const logFile = path.join(work, 'go-install.log');
  progress(
    `${name} ${version}: building ${pkg}@${version} from the Go module proxy (a few minutes the first time; log ${logFile})`,
  );
  await run('go', ['install', `${pkg}@${version}`], {
    cwd: work,
    logFile,
    env: childEnv({ GOBIN: path.join(work, 'bin'), GOFLAGS: '-buildvcs=false', CGO_ENABLED: '0' }),
  });
  ensureDir(path.dirname(target));
  fs.renameSync(path.join(work, 'bin', name), target);
  fs.rmSync(work, { recursive: true, force: true });
  progress(`${name} ${version}: built ${target}`);
  return target;
}

export function tctlBinPath(cfg: StackConfig): string {
  return path.join(cfg.cacheDir, 'bin', `tctl-${cfg.tctlVersion}`);
}

/**
 * tctl (archived) for operators who replay with it. `go install tctl@version` fails here because the proxy
 * refuses the module's version list (used for the deprecation check), so it is built inside a throwaway module.
 */
export async function ensureTctl(cfg: StackConfig, progress: Progress): Promise<string> {
  const target = tctlBinPath(cfg);
  if (fs.existsSync(target)) {
    progress(`tctl ${cfg.tctlVersion}: cached at ${target}`);
    return target;
  }
  requireTool('go');
  const work = fs.mkdtempSync(path.join(ensureDir(path.join(cfg.cacheDir, 'tmp')), 'tctl-'));
  const logFile = path.join(work, 'go-build.log');
  progress(`tctl ${cfg.tctlVersion}: building from the Go module proxy (about a minute; log ${logFile})`);
  const env = childEnv({ GOFLAGS: '-mod=mod -buildvcs=false', CGO_ENABLED: '0' });
  await run('go', ['mod', 'init', 'poimen.local/tctl-build'], { cwd: work, logFile, env });
  await run('go', ['get', `github.com/temporalio/tctl@${cfg.tctlVersion}`], { cwd: work, logFile, env });
  await run('go', ['build', '-o', path.join(work, 'tctl'), 'github.com/temporalio/tctl/cmd/tctl'], {
    cwd: work,
    logFile,
    env,
  });
  ensureDir(path.dirname(target));
  fs.renameSync(path.join(work, 'tctl'), target);
  fs.rmSync(work, { recursive: true, force: true });
  progress(`tctl ${cfg.tctlVersion}: built ${target}`);
  return target;
}

export function ensureTemporal(cfg: StackConfig, progress: Progress): Promise<string> {
  return ensureGoBinary(
    cfg,
    progress,
    'temporal',
    'github.com/temporalio/cli/cmd/temporal',
    cfg.temporalCliVersion,
    temporalBinPath(cfg),
  );
}

export async function provision(cfg: StackConfig, progress: Progress): Promise<Binaries> {
  // Check the tools before any step so a fresh machine learns what is missing before minutes of building.
  if (!fs.existsSync(path.join(path.dirname(kafkaLibsDir(cfg)), '.complete'))) {
    requireTool('java');
    requireTool('mvn');
  }
  if (!fs.existsSync(temporalBinPath(cfg)) || !fs.existsSync(tctlBinPath(cfg))) requireTool('go');
  requireTool('java');
  const kafkaLibs = await ensureKafka(cfg, progress);
  const temporalBin = await ensureTemporal(cfg, progress);
  const tctlBin = await ensureTctl(cfg, progress);
  return { kafkaLibsDir: kafkaLibs, temporalBin, tctlBin };
}

export function ensureDir(dir: string): string {
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}
