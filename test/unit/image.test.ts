/**
 * The production image holds the product only (Dockerfile, .dockerignore, deploy/docker): its build context is
 * an allow-list, its runtime stage copies the compiled code, the production dependencies and the launcher, and
 * the Temporal core bridge keeps the native module of the target platform alone. No Docker builder here: the
 * files are checked, and the pruning script is run on a copy of the installed core bridge, which must then load.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');
const read = (file: string): string => fs.readFileSync(path.join(root, file), 'utf8');
const instructions = read('Dockerfile')
  .replace(/\\\n/g, ' ')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l !== '' && !l.startsWith('#'));

/** Docker's .dockerignore semantics for the patterns used here: the last matching line wins. */
function inContext(file: string): boolean {
  let included = true;
  for (const raw of read('.dockerignore').split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const exception = line.startsWith('!');
    const pattern = (exception ? line.slice(1) : line).replace(/\/$/, '');
    if (pattern === '*' || file === pattern || file.startsWith(`${pattern}/`)) included = exception;
  }
  return included;
}

describe('the image build context (.dockerignore)', () => {
  const tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);

  it('is an allow-list: package files, tsconfigs, src/, bin/ and the core-bridge pruning script', () => {
    const sent = tracked.filter(inContext);
    const outside = sent.filter(
      (f) =>
        !/^(package(-lock)?\.json|tsconfig(\.build)?\.json|deploy\/docker\/prune-core-bridge\.sh)$/.test(f) &&
        !/^(src|bin)\//.test(f),
    );
    expect(outside).toEqual([]);
    expect(sent).toContain('src/cli/main.ts');
    for (const dir of ['test/', 'tools/', 'devstack/', 'deploy/compose/', 'docs/', 'bench/']) {
      expect(sent.filter((f) => f.startsWith(dir))).toEqual([]);
    }
  });

  it('holds no dev stack: nothing sent names it, and the launchers are the relay’s alone', () => {
    const sent = tracked.filter(inContext);
    expect(tracked.filter((f) => f.startsWith('devstack/')).length).toBeGreaterThan(0);
    expect(sent.filter((f) => /(^|\/)devstack(\/|$)|poimen-dev|stack(Commands)?\.ts$|demo/i.test(f))).toEqual(
      [],
    );
    expect(sent.filter((f) => f.startsWith('bin/'))).toEqual(['bin/poimen-relay.js']);
  });

  it('holds every file the Dockerfile copies from the context', () => {
    const sources = instructions
      .filter((l) => /^COPY\s/.test(l) && !/--from=/.test(l))
      .flatMap((l) => l.split(/\s+/).slice(1, -1));
    expect(sources.length).toBeGreaterThan(0);
    for (const s of sources) {
      const present = tracked.filter((f) => f === s || f.startsWith(`${s}/`));
      expect({ s, present: present.length > 0 && present.every(inContext) }).toEqual({ s, present: true });
    }
  });
});

describe('the compiled code (dist/, tsconfig.build.json)', () => {
  it('is built from src/ alone: the dev stack and the tools are compiled apart, never into dist/', () => {
    const tsc = path.join(root, 'node_modules', '.bin', 'tsc');
    const listed = execFileSync(tsc, ['-p', 'tsconfig.build.json', '--listFilesOnly'], {
      cwd: root,
      encoding: 'utf8',
    })
      .split('\n')
      .filter((f) => f.startsWith(`${root}/`) && !f.includes('/node_modules/'))
      .map((f) => path.relative(root, f));
    expect(listed).toContain('src/cli/main.ts');
    expect(listed.filter((f) => !f.startsWith('src/'))).toEqual([]);
  });
});

describe('the runtime stage', () => {
  const runtime = instructions.slice(instructions.findIndex((l) => /^FROM .* AS runtime$/.test(l)));

  it('copies only the compiled code, the production dependencies, the package files and the launcher', () => {
    const copies = runtime.filter((l) => /^COPY\s/.test(l));
    expect(copies).toEqual([
      'COPY --from=build /app/package.json /app/package-lock.json /app/build-info.json ./',
      'COPY --from=build /app/node_modules ./node_modules',
      'COPY --from=build /app/dist ./dist',
      'COPY bin ./bin',
    ]);
  });

  it('gets node_modules pruned of dev dependencies and of the other platforms’ core bridges, for TARGETARCH', () => {
    const build = instructions.slice(
      0,
      instructions.findIndex((l) => /^FROM .* AS runtime$/.test(l)),
    );
    const prune = build.findIndex((l) => l.includes('npm prune --omit=dev'));
    const bridge = build.findIndex((l) =>
      /prune-core-bridge\.sh "\$\{TARGETARCH:-\$\(dpkg --print-architecture\)\}" node_modules/.test(l),
    );
    expect(prune).toBeGreaterThan(0);
    expect(bridge).toBeGreaterThan(prune);
    expect(build.slice(0, bridge)).toContain('ARG TARGETARCH');
  });
});

describe('deploy/docker/prune-core-bridge.sh', () => {
  const installed = path.join(root, 'node_modules', '@temporalio', 'core-bridge');
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-bridge-'));
  afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

  /** A node_modules holding a hard-linked copy of the installed bridge and links to its dependencies. */
  function copyOfBridge(name: string): string {
    const modules = path.join(work, name, 'node_modules');
    fs.mkdirSync(path.join(modules, '@temporalio'), { recursive: true });
    execFileSync('cp', ['-al', installed, path.join(modules, '@temporalio', 'core-bridge')]);
    fs.symlinkSync(path.join(root, 'node_modules', '@grpc'), path.join(modules, '@grpc'));
    fs.symlinkSync(
      path.join(root, 'node_modules', '@temporalio', 'common'),
      path.join(modules, '@temporalio', 'common'),
    );
    return modules;
  }
  const prune = (arch: string, modules: string) =>
    spawnSync('sh', [path.join(root, 'deploy', 'docker', 'prune-core-bridge.sh'), arch, modules], {
      encoding: 'utf8',
    });

  it('keeps only the amd64 module, without the Rust sources, and the bridge still loads', () => {
    expect(fs.readdirSync(path.join(installed, 'releases')).length).toBeGreaterThan(1);
    const modules = copyOfBridge('amd64');
    const res = prune('amd64', modules);
    expect(res).toMatchObject({
      status: 0,
      stdout: 'prune-core-bridge: kept releases/x86_64-unknown-linux-gnu\n',
    });
    const bridge = path.join(modules, '@temporalio', 'core-bridge');
    expect(fs.readdirSync(path.join(bridge, 'releases'))).toEqual(['x86_64-unknown-linux-gnu']);
    expect(fs.existsSync(path.join(bridge, 'sdk-core'))).toBe(false);
    // This machine is x86_64 Linux: the loader picks the one module left, and the native code loads.
    const load = spawnSync(
      process.execPath,
      ['-e', `const b = require(${JSON.stringify(bridge)}); console.log(typeof b.native.newClient)`],
      { encoding: 'utf8' },
    );
    expect({ status: load.status, stdout: load.stdout.trim(), stderr: load.stderr }).toEqual({
      status: 0,
      stdout: 'function',
      stderr: '',
    });
  });

  it('keeps the aarch64 module for arm64 and refuses an architecture without a prebuilt module', () => {
    const modules = copyOfBridge('arm64');
    expect(prune('arm64', modules).status).toBe(0);
    expect(fs.readdirSync(path.join(modules, '@temporalio', 'core-bridge', 'releases'))).toEqual([
      'aarch64-unknown-linux-gnu',
    ]);
    const refused = prune('s390x', copyOfBridge('s390x'));
    expect(refused.status).toBe(2);
    expect(refused.stderr.trim()).toBe(
      "prune-core-bridge: no prebuilt Temporal core bridge for architecture 's390x' (amd64, arm64)",
    );
  });
});
