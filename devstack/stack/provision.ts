/**
 * Provisioning of the local stack's binaries, cached outside the repo ($POIMEN_CACHE_DIR) so every clone on
 * a machine shares them and a new machine rebuilds them. Each artifact is built into a temporary folder and
 * renamed into place only when complete, so an interrupted run never leaves a half-built cache behind.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { type StackConfig, childEnv } from '../config';
import { StackError } from 'poimen-relay/internal/errors';
import { type BuildWatch, watchBuild } from './buildProgress';
import type { Progress } from './progress';
import { PACKAGE_ROOT } from 'poimen-relay/internal/version';
import { requireTool } from './tools';

export interface Binaries {
  kafkaLibsDir: string;
  temporalBin: string;
  tctlBin?: string;
}

/**
 * What a command needs built. The stack (`stack up`, the demo, the tests' global setup) runs Kafka and the
 * temporal dev server; tctl, minutes of `go build` the first time, only for the suite that drives it and for
 * `stack provision --tctl`.
 */
export interface ProvisionPlan {
  tctl: boolean;
}

export const STACK_PLAN: ProvisionPlan = { tctl: false };

export function kafkaLibsDir(cfg: StackConfig): string {
  return path.join(cfg.cacheDir, 'kafka', cfg.kafkaVersion, 'libs');
}

export function temporalBinPath(cfg: StackConfig): string {
  return path.join(cfg.cacheDir, 'bin', `temporal-${cfg.temporalCliVersion}`);
}

/** Runs a build step, its output into the log file and, line by line, into the progress watcher. */
export function run(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; logFile: string; watch: BuildWatch },
): Promise<void> {
  return new Promise((resolve, reject) => {
    const log = fs.createWriteStream(opts.logFile, { flags: 'a' });
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    for (const stream of [child.stdout, child.stderr]) {
      stream.pipe(log, { end: false });
      readline.createInterface({ input: stream }).on('line', (l) => opts.watch.line(l));
    }
    let settled = false;
    child.on('error', (err) => {
      if (settled) return;
      settled = true;
      log.end(() => reject(new StackError(`${cmd} could not be started: ${err.message}`)));
    });
    // 'close', not 'exit': the output is fully in the log before its tail is read.
    child.on('close', (code, signal) => {
      if (settled) return;
      settled = true;
      log.end(() => {
        if (code === 0) return resolve();
        const tail = fs.readFileSync(opts.logFile, 'utf8').split('\n').slice(-15).join('\n');
        reject(
          new StackError(
            `${cmd} ${args.join(' ')} failed (${signal ?? `exit ${code}`}); log ${opts.logFile}:\n${tail}`,
          ),
        );
      });
    });
  });
}

export async function ensureKafka(cfg: StackConfig, progress: Progress): Promise<string> {
  return resolveFromMaven(cfg, progress, {
    name: 'kafka',
    pom: 'pom.xml',
    artifact: 'kafka_2.13',
    libs: kafkaLibsDir(cfg),
  });
}

export function kafkaToolsLibsDir(cfg: StackConfig): string {
  return path.join(cfg.cacheDir, 'kafka-tools', cfg.kafkaVersion, 'libs');
}

/**
 * Kafka's command-line tools (org.apache.kafka.tools.TopicCommand, BrokerApiVersionsCommand: what kafka-topics.sh
 * and kafka-broker-api-versions.sh run), for the suite that runs deploy/scripts/create-topics.sh and for
 * `stack provision --kafka-tools`, never for the stack itself. Their own folder, not the broker's libs/: a cache
 * made before them stays valid, and a running broker's classpath is never replaced under it.
 */
export async function ensureKafkaTools(cfg: StackConfig, progress: Progress): Promise<string> {
  return resolveFromMaven(cfg, progress, {
    name: 'kafka-tools',
    pom: 'tools-pom.xml',
    artifact: 'kafka-tools',
    libs: kafkaToolsLibsDir(cfg),
  });
}

/** `mvn dependency:copy-dependencies` of one of stack/kafka's poms into `libs`, once (a `.complete` beside it). */
async function resolveFromMaven(
  cfg: StackConfig,
  progress: Progress,
  what: { name: string; pom: string; artifact: string; libs: string },
): Promise<string> {
  const { name, libs } = what;
  const done = path.join(path.dirname(libs), '.complete');
  if (fs.existsSync(done)) {
    progress(`${name} ${cfg.kafkaVersion}: cached in ${libs}`);
    return libs;
  }
  requireTool('java');
  requireTool('mvn');
  const work = fs.mkdtempSync(path.join(ensureDir(path.join(cfg.cacheDir, 'tmp')), `${name}-`));
  const logFile = path.join(work, 'mvn.log');
  fs.copyFileSync(path.join(PACKAGE_ROOT, 'stack', 'kafka', what.pom), path.join(work, 'pom.xml'));
  progress(
    `${name} ${cfg.kafkaVersion}: resolving org.apache.kafka:${what.artifact} and its runtime from Maven Central (log ${logFile})`,
  );
  const watch = watchBuild(`${name} ${cfg.kafkaVersion}`, progress);
  await run(
    'mvn',
    [
      // Not -q: the progress watcher counts the "Downloaded from" lines.
      '-B',
      `-Dkafka.version=${cfg.kafkaVersion}`,
      'dependency:copy-dependencies',
      '-DincludeScope=runtime',
      `-DoutputDirectory=${path.join(work, 'libs')}`,
    ],
    { cwd: work, logFile, watch },
  ).finally(() => watch.stop());
  const jars = fs.readdirSync(path.join(work, 'libs'));
  if (!jars.some((j) => j.startsWith(`${what.artifact}-${cfg.kafkaVersion}`))) {
    throw new StackError(`maven did not produce ${what.artifact}-${cfg.kafkaVersion}.jar (see ${logFile})`);
  }
  const target = path.dirname(libs);
  fs.rmSync(target, { recursive: true, force: true });
  ensureDir(path.dirname(target));
  fs.renameSync(work, target);
  fs.writeFileSync(done, new Date().toISOString());
  progress(`${name} ${cfg.kafkaVersion}: ${jars.length} jars in ${libs} (${watch.stop()})`);
  return libs;
}

/**
 * GOTOOLCHAIN=auto: a host Go older than a module asks for (the temporal CLI asks for 1.25) fetches that
 * toolchain from the module proxy instead of failing, so distribution Go packages from 1.21 on do.
 */
export const GO_ENV = { GOFLAGS: '-buildvcs=false', CGO_ENABLED: '0', GOTOOLCHAIN: 'auto' };

/**
 * `go install`s the packages of one module version and moves each built binary (named after its package's last
 * path element) to its target; `targets[i]` belongs to `pkgs[i]`. Cached when every target exists.
 */
export async function ensureGoBinaries(
  cfg: StackConfig,
  progress: Progress,
  name: string,
  pkgs: string[],
  version: string,
  targets: string[],
): Promise<string[]> {
  if (targets.every((t) => fs.existsSync(t))) {
    progress(`${name} ${version}: cached at ${targets.join(', ')}`);
    return targets;
  }
  requireTool('go');
  const work = fs.mkdtempSync(path.join(ensureDir(path.join(cfg.cacheDir, 'tmp')), `${name}-`));
  const logFile = path.join(work, 'go-install.log');
  progress(
    `${name} ${version}: building ${pkgs.join(' ')} from the Go module proxy (minutes the first time; log ${logFile})`,
  );
  const watch = watchBuild(`${name} ${version}`, progress);
  await run('go', ['install', '-v', ...pkgs.map((pkg) => `${pkg}@${version}`)], {
    cwd: work,
    logFile,
    env: childEnv({ GOBIN: path.join(work, 'bin'), ...GO_ENV }),
    watch,
  }).finally(() => watch.stop());
  pkgs.forEach((pkg, i) => {
    const target = targets[i] as string;
    ensureDir(path.dirname(target));
    fs.renameSync(path.join(work, 'bin', path.basename(pkg)), target);
  });
  fs.rmSync(work, { recursive: true, force: true });
  progress(`${name} ${version}: built ${targets.join(', ')} (${watch.stop()})`);
  return targets;
}

export function tctlBinPath(cfg: StackConfig): string {
  return path.join(cfg.cacheDir, 'bin', `tctl-${cfg.tctlVersion}`);
}

/**
 * tctl (archived): for the suite that resets a dispatch with it, and operators who ask (`stack provision --tctl`),
 * never for the stack itself. `go install tctl@version` fails here because the proxy
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
  progress(
    `tctl ${cfg.tctlVersion}: building from the Go module proxy (minutes the first time; log ${logFile})`,
  );
  const env = childEnv({ ...GO_ENV, GOFLAGS: '-mod=mod -buildvcs=false' });
  const watch = watchBuild(`tctl ${cfg.tctlVersion}`, progress);
  try {
    await run('go', ['mod', 'init', 'poimen.local/tctl-build'], { cwd: work, logFile, env, watch });
    await run('go', ['get', `github.com/temporalio/tctl@${cfg.tctlVersion}`], {
      cwd: work,
      logFile,
      env,
      watch,
    });
    await run('go', ['build', '-v', '-o', path.join(work, 'tctl'), 'github.com/temporalio/tctl/cmd/tctl'], {
      cwd: work,
      logFile,
      env,
      watch,
    });
  } finally {
    watch.stop();
  }
  ensureDir(path.dirname(target));
  fs.renameSync(path.join(work, 'tctl'), target);
  fs.rmSync(work, { recursive: true, force: true });
  progress(`tctl ${cfg.tctlVersion}: built ${target} (${watch.stop()})`);
  return target;
}

export async function ensureTemporal(cfg: StackConfig, progress: Progress): Promise<string> {
  const [bin] = await ensureGoBinaries(
    cfg,
    progress,
    'temporal',
    ['github.com/temporalio/cli/cmd/temporal'],
    cfg.temporalCliVersion,
    [temporalBinPath(cfg)],
  );
  return bin as string;
}

export async function provision(
  cfg: StackConfig,
  progress: Progress,
  plan: ProvisionPlan = STACK_PLAN,
): Promise<Binaries> {
  // Check the tools before any step so a fresh machine learns what is missing before minutes of building.
  if (!fs.existsSync(path.join(path.dirname(kafkaLibsDir(cfg)), '.complete'))) {
    requireTool('java');
    requireTool('mvn');
  }
  const goBuilt = [temporalBinPath(cfg), ...(plan.tctl ? [tctlBinPath(cfg)] : [])];
  if (!goBuilt.every((bin) => fs.existsSync(bin))) requireTool('go');
  requireTool('java');
  const kafkaLibs = await ensureKafka(cfg, progress);
  const temporalBin = await ensureTemporal(cfg, progress);
  if (!plan.tctl) return { kafkaLibsDir: kafkaLibs, temporalBin };
  return { kafkaLibsDir: kafkaLibs, temporalBin, tctlBin: await ensureTctl(cfg, progress) };
}

export function ensureDir(dir: string): string {
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}
