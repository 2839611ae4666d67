/**
 * Offline schema validation of the Kubernetes manifests: kustomize renders them, kubeconform checks them in
 * strict mode (unknown fields rejected) against the Kubernetes JSON schemas.
 *
 * Everything comes from registries this machine reaches, built once into POIMEN_CACHE_DIR:
 * - kustomize and kubeconform: Go programs, `go install`ed from the Go module proxy;
 * - the schemas: kubeconform's usual source (a GitHub repository) is out of reach, but the PyPI package
 *   kubernetes-validate ships the same openapi2jsonschema output for each Kubernetes minor. Its files point at a
 *   shared `/api/_definitions.json`; they are rewritten to the file's real location so kubeconform resolves them.
 * Custom resources (KEDA, Prometheus operator) have no schema here: kubeconform is told to skip them by kind and
 * the deploy test checks their fields itself.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadStackConfig } from '../../devstack/config';

const KUSTOMIZE = { pkg: 'sigs.k8s.io/kustomize/kustomize/v5', version: 'v5.7.1' };
const KUBECONFORM = { pkg: 'github.com/yannh/kubeconform/cmd/kubeconform', version: 'v0.8.0' };
const SCHEMAS = { pkg: 'kubernetes-validate', version: '1.37.0' };

function cacheDir(): string {
  return loadStackConfig(process.env).cacheDir;
}

/** Runs a provisioning step; a failure is one line naming the step and the tool's own last words. */
function step(
  what: string,
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): void {
  try {
    execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 600_000, ...opts });
  } catch (err) {
    const e = err as { code?: string; stderr?: Buffer | string };
    const detail =
      e.code === 'ENOENT'
        ? `${cmd} is not installed`
        : String(e.stderr ?? err)
            .trim()
            .split('\n')
            .slice(-2)
            .join(' ');
    throw new Error(`${what} failed: ${detail}`, { cause: err });
  }
}

/** The first build takes a minute or two: say so on stderr (jest shows nothing else meanwhile). */
function announce(what: string): void {
  process.stderr.write(`[deploy test] ${what} (once; cached in ${cacheDir()})\n`);
}

function goTool(name: string, tool: { pkg: string; version: string }): string {
  const target = path.join(cacheDir(), 'bin', `${name}-${tool.version}`);
  if (fs.existsSync(target)) return target;
  announce(`building ${name} ${tool.version} from the Go module proxy`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), `poimen-${name}-`));
  try {
    step(`go install ${tool.pkg}@${tool.version}`, 'go', ['install', `${tool.pkg}@${tool.version}`], {
      cwd: work,
      env: { ...process.env, GOBIN: work, GOFLAGS: '-buildvcs=false', CGO_ENABLED: '0' },
    });
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.copyFileSync(path.join(work, name), `${target}.${process.pid}.tmp`);
    fs.chmodSync(`${target}.${process.pid}.tmp`, 0o755);
    fs.renameSync(`${target}.${process.pid}.tmp`, target);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return target;
}

/**
 * Renames a finished `staging` folder to `target`, unless a neighbour (another jest worker) put its finished copy
 * there first: that one is kept, never removed under a run validating against it. Only a target without
 * `.complete`, a leftover of an interrupted run, is replaced.
 */
export function placeOnce(staging: string, target: string): void {
  const complete = () => fs.existsSync(path.join(target, '.complete'));
  try {
    fs.renameSync(staging, target);
  } catch (err) {
    if (complete()) return;
    if (!fs.existsSync(target)) throw err;
    fs.rmSync(target, { recursive: true, force: true });
    fs.renameSync(staging, target);
  }
}

/** The strict schemas of Kubernetes `version` (e.g. 1.31.0), as kubeconform's local registry reads them. */
function schemaDir(version: string): string {
  const root = path.join(cacheDir(), 'kubernetes-json-schema', `${SCHEMAS.pkg}-${SCHEMAS.version}`);
  const target = path.join(root, `v${version}-standalone-strict`);
  if (fs.existsSync(path.join(target, '.complete'))) return target;
  announce(`fetching the Kubernetes ${version} schemas (PyPI ${SCHEMAS.pkg}==${SCHEMAS.version})`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-k8s-schemas-'));
  // Built beside the target and renamed into place: a concurrent run never sees half a directory.
  const staging = `${target}.${process.pid}.tmp`;
  try {
    step(
      `pip download ${SCHEMAS.pkg}==${SCHEMAS.version} (needs python3 with pip: apt-get install python3-pip)`,
      'python3',
      ['-m', 'pip', 'download', '--no-deps', '--quiet', '-d', work, `${SCHEMAS.pkg}==${SCHEMAS.version}`],
    );
    const wheel = fs.readdirSync(work).find((f) => f.endsWith('.whl'));
    if (!wheel) throw new Error(`pip download ${SCHEMAS.pkg}==${SCHEMAS.version} produced no wheel`);
    const prefix = `kubernetes_validate/kubernetes-json-schema/v${version}-local-strict/`;
    // A wheel is a zip; Python reads it everywhere pip runs.
    step(`unpacking ${wheel}`, 'python3', [
      '-c',
      'import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\n' +
        'z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith(sys.argv[3])])',
      path.join(work, wheel),
      work,
      prefix,
    ]);
    const from = path.join(work, prefix);
    if (!fs.existsSync(from)) throw new Error(`${wheel} has no schemas for Kubernetes ${version}`);
    fs.mkdirSync(staging, { recursive: true });
    const definitions = `file://${path.join(target, '_definitions.json')}`;
    for (const file of fs.readdirSync(from)) {
      const text = fs.readFileSync(path.join(from, file), 'utf8');
      fs.writeFileSync(
        path.join(staging, file),
        text.replaceAll('"/api/_definitions.json', `"${definitions}`),
      );
    }
    fs.writeFileSync(path.join(staging, '.complete'), `${SCHEMAS.pkg}==${SCHEMAS.version}\n`);
    placeOnce(staging, target);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
    fs.rmSync(staging, { recursive: true, force: true });
  }
  return target;
}

export interface Kubeconform {
  /** `kustomize build dir`: the manifests as `kubectl apply -k dir` would send them. */
  build(dir: string): string;
  /** kubeconform -strict on a multi-document YAML: its JSON report. */
  validate(yaml: string, kubernetesVersion: string, skipKinds: string[]): KubeconformReport;
}

export interface KubeconformReport {
  resources: { filename: string; kind: string; name: string; status: string; msg: string }[];
  summary: { valid: number; invalid: number; errors: number; skipped: number };
}

/** Builds (first run only: a couple of minutes) and returns the two tools. */
export function provisionKubeconform(): Kubeconform {
  const kustomize = goTool('kustomize', KUSTOMIZE);
  const kubeconform = goTool('kubeconform', KUBECONFORM);
  return {
    build: (dir) => execFileSync(kustomize, ['build', dir], { encoding: 'utf8' }),
    validate: (yaml, kubernetesVersion, skipKinds) => {
      const args = ['-strict', '-summary', '-verbose', '-output', 'json'];
      args.push('-schema-location', `${schemaDir(kubernetesVersion)}/{{.ResourceKind}}{{.KindSuffix}}.json`);
      if (skipKinds.length > 0) args.push('-skip', skipKinds.join(','));
      // kubeconform exits 1 on an invalid resource; the report says which, so read it either way.
      let out: string;
      try {
        out = execFileSync(kubeconform, [...args, '-'], { input: yaml, encoding: 'utf8' });
      } catch (err) {
        out = (err as { stdout?: string }).stdout ?? '';
        if (!out) throw err;
      }
      return JSON.parse(out) as KubeconformReport;
    },
  };
}
