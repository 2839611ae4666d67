/**
 * The relay processes as the shipped deployment artifacts define them: the arguments and environment that
 * `kustomize build` (the base and every overlay) and docker-compose.yml give the ingester and the worker, resolved
 * as Kubernetes and Compose would (envFrom ConfigMaps, `${VAR:-default}` with an empty shell environment), so a test
 * can start exactly those processes. And the manifest's own word on why a value differs from the default: a comment
 * on the key saying `differs from the default: <why>`, read from the source file (kustomize drops comments).
 */
import fs from 'node:fs';
import path from 'node:path';
import { type Document, isMap, isPair, isScalar, parse, parseAllDocuments, parseDocument } from 'yaml';
import { provisionKubeconform } from './kubeconform';

const ROOT = path.resolve(__dirname, '..', '..');

export interface ShippedProcess {
  /** Where it is defined, e.g. `deploy/k8s Deployment/poimen-relay-worker`. */
  source: string;
  role: 'ingest' | 'worker';
  /** The image's entrypoint arguments (`node bin/poimen-relay.js <args>`). */
  args: string[];
  env: Record<string, string>;
  /**
   * Names set for this process alone (a container's `env`, a Compose service's `environment`), which it must read;
   * the rest come from sources shared by every relay process (the ConfigMap, the Secret).
   */
  own: string[];
  /** The source files whose comments may say why a value differs from the default. */
  files: string[];
}

interface K8sContainer {
  image?: string;
  args?: string[];
  command?: string[];
  env?: { name: string; value?: string; valueFrom?: { configMapKeyRef?: { name: string; key: string } } }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
}
interface K8sObject {
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
  spec?: { template?: { spec?: { containers?: K8sContainer[] } } };
}

/** The Secret the Deployments read, which an operator creates from secret.example.yaml. */
const SECRET_NAME = 'poimen-relay-secrets';

/** The Secret an operator creates from secret.example.yaml, with its placeholders filled. */
function exampleSecret(fill: (key: string, example: string) => string): Record<string, string> {
  const doc = parse(fs.readFileSync(path.join(ROOT, 'deploy/k8s/secret.example.yaml'), 'utf8')) as {
    stringData: Record<string, string>;
  };
  return Object.fromEntries(Object.entries(doc.stringData).map(([k, v]) => [k, fill(k, v)]));
}

const roleOf = (args: string[]): ShippedProcess['role'] | undefined =>
  args[0] === 'ingest' || args[0] === 'worker' ? args[0] : undefined;

/** The ingester and worker of `kustomize build <dir>`; the Secret's placeholders filled by `fillSecret`. */
export function k8sProcesses(
  dir: string,
  fillSecret: (key: string, example: string) => string,
): ShippedProcess[] {
  const rendered = provisionKubeconform().build(path.join(ROOT, dir));
  const objects = parseAllDocuments(rendered).map((d) => d.toJS() as K8sObject);
  const configMaps = new Map(
    objects.filter((o) => o.kind === 'ConfigMap').map((o) => [o.metadata.name, o.data ?? {}]),
  );
  const secret = exampleSecret(fillSecret);
  const out: ShippedProcess[] = [];
  for (const o of objects) {
    if (o.kind !== 'Deployment') continue;
    for (const c of o.spec?.template?.spec?.containers ?? []) {
      if (!c.image?.startsWith('poimen-relay')) continue;
      // The image's ENTRYPOINT is node bin/poimen-relay.js; a command would replace it.
      if (c.command) throw new Error(`${dir} ${o.metadata.name}: a command replaces the image's entrypoint`);
      const role = roleOf(c.args ?? []);
      if (!role) continue;
      // As the kubelet resolves it: envFrom in order (a later source wins), then env; a reference to something
      // missing keeps the container from starting, so here it stops the test.
      const where = `${dir} ${o.metadata.name}`;
      const env: Record<string, string> = {};
      for (const from of c.envFrom ?? []) {
        if (from.configMapRef) {
          const data = configMaps.get(from.configMapRef.name);
          if (!data)
            throw new Error(`${where}: envFrom names ConfigMap ${from.configMapRef.name}, not in the build`);
          Object.assign(env, data);
        } else if (from.secretRef) {
          if (from.secretRef.name !== SECRET_NAME)
            throw new Error(`${where}: envFrom names Secret ${from.secretRef.name}, not ${SECRET_NAME}`);
          Object.assign(env, secret);
        } else throw new Error(`${where}: an envFrom source this test does not resolve`);
      }
      for (const e of c.env ?? []) {
        if (e.valueFrom && !e.valueFrom.configMapKeyRef)
          throw new Error(`${where}: ${e.name} comes from a valueFrom this test does not resolve`);
        const ref = e.valueFrom?.configMapKeyRef;
        const value = ref ? configMaps.get(ref.name)?.[ref.key] : (e.value ?? '');
        if (value === undefined) throw new Error(`${where}: ${e.name} refers to a missing ConfigMap key`);
        env[e.name] = value;
      }
      out.push({
        source: `${dir} Deployment/${o.metadata.name}`,
        role,
        args: c.args ?? [],
        env,
        own: (c.env ?? []).map((e) => e.name),
        files: [
          'deploy/k8s/configmap.yaml',
          `deploy/k8s/${role === 'ingest' ? 'ingester' : 'worker'}-deployment.yaml`,
        ],
      });
    }
  }
  return out;
}

/** `${VAR}`, `${VAR:-default}` and `${VAR-default}` as Compose interpolates them with `shell` as the environment. */
function interpolate(value: string, shell: Record<string, string>): string {
  return value.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}/g,
    (_m, name: string, op?: string, dflt?: string) => {
      const v = shell[name];
      if (op === ':-') return v === undefined || v === '' ? (dflt ?? '') : v;
      if (op === '-') return v === undefined ? (dflt ?? '') : v;
      return v ?? '';
    },
  );
}

/** The ingester and worker services of docker-compose.yml, run with an empty shell environment. */
export function composeProcesses(): ShippedProcess[] {
  const file = 'docker-compose.yml';
  const doc = parse(fs.readFileSync(path.join(ROOT, file), 'utf8'), { merge: true }) as {
    services: Record<string, { image?: string; command?: string[]; environment?: Record<string, unknown> }>;
  };
  const out: ShippedProcess[] = [];
  for (const [name, s] of Object.entries(doc.services)) {
    if (!s.image?.startsWith('poimen-relay')) continue;
    const role = roleOf(s.command ?? []);
    if (!role) continue;
    const env = Object.fromEntries(
      Object.entries(s.environment ?? {}).map(([k, v]) => [k, interpolate(v === null ? '' : String(v), {})]),
    );
    out.push({
      source: `${file} service ${name}`,
      role,
      args: s.command ?? [],
      env,
      own: Object.keys(env),
      files: [file],
    });
  }
  return out;
}

const WHY = /differs from the default: *(\S.*)/;

/** Variables whose key carries a `differs from the default: <why>` comment in one of the files, with the why. */
export function statedDifferences(files: string[]): Map<string, string> {
  const found = new Map<string, string>();
  const visit = (node: unknown): void => {
    if (isMap(node)) {
      // A list entry `- name: X` with the comment above the dash: Kubernetes' env lists.
      const named = node.items.find((p) => isPair(p) && isScalar(p.key) && p.key.value === 'name');
      const onEntry = node.commentBefore ? WHY.exec(node.commentBefore) : null;
      if (named && onEntry && isScalar(named.value)) found.set(String(named.value.value), onEntry[1]!.trim());
      for (const item of node.items) {
        if (!isPair(item)) continue;
        const key = isScalar(item.key) ? String(item.key.value) : undefined;
        const comment = [
          (item.key as { commentBefore?: string } | null)?.commentBefore,
          (item.value as { comment?: string } | null)?.comment,
        ]
          .filter(Boolean)
          .join('\n');
        const why = WHY.exec(comment);
        if (key && why) found.set(key, why[1]!.trim());
        visit(item.value);
      }
    } else if (node && typeof node === 'object' && 'items' in node) {
      for (const item of (node as { items: unknown[] }).items) visit(item);
    }
  };
  for (const f of files) {
    const text = fs.readFileSync(path.join(ROOT, f), 'utf8');
    const docs: Document[] = f.endsWith('.yml') ? [parseDocument(text)] : parseAllDocuments(text);
    for (const d of docs) visit(d.contents);
  }
  return found;
}
