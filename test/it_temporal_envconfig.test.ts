/**
 * The relay's processes configured for Temporal only through Temporal's standard settings: a TOML profile
 * (TEMPORAL_CONFIG_FILE + TEMPORAL_PROFILE: address, namespace, TLS off), TEMPORAL_GRPC_META_*, and the API key in
 * TEMPORAL_API_KEY_FILE, rotated while they run. TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE are unset.
 *
 * How the key is seen: the dev server accepts any key, so it cannot tell which one came. The profile's address is
 * a recording gRPC proxy in front of it (test/support/grpcProxy.ts), which sees each call's `authorization`
 * header as a key-checking server would: the ingester's starts and the worker's polls and completions carry the
 * first key, and after the file changes, the new one — each process switching once, never back, no restart.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cliEnv, runCli } from './support/cli';
import { type GrpcProxy, type SeenCall, startGrpcProxy, startTlsFront } from './support/grpcProxy';
import { type RelayProcess, startRelayProcess } from './support/relay';
import { type Harness, createHarness } from './support/relayHarness';
import { bareNamespace } from './support/temporalOps';
import { testServices } from './support/testEnv';
import { waitFor } from './support/wait';

jest.setTimeout(180_000);

/** Calls only the ingester makes, and only the worker makes. */
const INGESTER_CALLS = new Set(['StartWorkflowExecution']);
const WORKER_CALLS = new Set([
  'PollWorkflowTaskQueue',
  'PollActivityTaskQueue',
  'RespondWorkflowTaskCompleted',
  'RespondActivityTaskCompleted',
]);

let h: Harness;
let proxy: GrpcProxy;
let front: Awaited<ReturnType<typeof startTlsFront>> | undefined;
const processes: RelayProcess[] = [];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-envconfig-it-'));

afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill()));
  await h?.cleanup();
  await proxy?.close();
  await front?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The keys one process sent, in the order of its calls. */
function keysOf(calls: SeenCall[], methods: Set<string>): string[] {
  return calls.filter((c) => methods.has(c.method)).map((c) => String(c.headers.authorization));
}

/** Each distinct value once, in order: [a, a, b, b] → [a, b]. */
const runs = (xs: string[]) => xs.filter((x, i) => i === 0 || xs[i - 1] !== x);

test('worker and ingester connect through a TOML profile and pick up a rotated API key without a restart', async () => {
  const services = testServices();
  h = await createHarness();
  proxy = await startGrpcProxy(services.temporalAddress);
  const probe = randomUUID();
  const configFile = path.join(dir, 'temporal.toml');
  fs.writeFileSync(
    configFile,
    [
      '[profile.relay-it]',
      `address = "${proxy.address}"`,
      `namespace = "${services.namespace}"`,
      // The dev server speaks plaintext; an API key would otherwise turn TLS on.
      '[profile.relay-it.tls]',
      'disabled = true',
      '',
    ].join('\n'),
  );
  const keyFile = path.join(dir, 'api-key');
  fs.writeFileSync(keyFile, 'key-one\n');
  const env: NodeJS.ProcessEnv = {
    ...h.env,
    TEMPORAL_CONFIG_FILE: configFile,
    TEMPORAL_PROFILE: 'relay-it',
    TEMPORAL_API_KEY_FILE: keyFile,
    TEMPORAL_GRPC_META_X_POIMEN_PROBE: probe,
  };
  delete env.TEMPORAL_ADDRESS;
  delete env.TEMPORAL_NAMESPACE;
  delete env.TEMPORAL_API_KEY;
  const worker = await startRelayProcess('worker', env, `${h.tenant}-envconfig-worker`);
  processes.push(worker);
  const ingester = await startRelayProcess('ingest', env, `${h.tenant}-envconfig-ingest`);
  processes.push(ingester);

  await h.publish(h.dispatchValue('before-rotation'));
  await h.api.waitFor((a) => a.requestsFor('before-rotation').length >= 1, 60_000, 'the first dispatch');
  // Everything went through the profile's address, with the file's key and the metadata variable.
  expect(keysOf(proxy.calls, INGESTER_CALLS)).toEqual(['Bearer key-one']);
  expect(runs(keysOf(proxy.calls, WORKER_CALLS))).toEqual(['Bearer key-one']);
  expect(proxy.calls.every((c) => c.headers['x-poimen-probe'] === probe)).toBe(true);

  // Rotated as a secret mount does it: a new file moved into place.
  fs.writeFileSync(`${keyFile}.new`, 'key-two\n');
  fs.renameSync(`${keyFile}.new`, keyFile);
  // Each process re-reads the file on its own (once a second): both have the new key before the next dispatch.
  const logged = (p: RelayProcess, text: string) => fs.readFileSync(p.logFile, 'utf8').includes(text);
  await waitFor(
    () =>
      logged(ingester, 'Temporal API key file changed') &&
      logged(worker, 'the worker connection sends the new Temporal API key'),
    { timeoutMs: 30_000, what: 'ingester and worker to take the new key' },
  );
  await h.publish(h.dispatchValue('after-rotation'));
  await h.api.waitFor((a) => a.requestsFor('after-rotation').length >= 1, 60_000, 'the second dispatch');
  await h.client.workflow.getHandle(h.wfId('after-rotation')).result();

  // The ingester's second start carries the new key; the worker completed the second dispatch with it. Each
  // switched once (a long poll begun before the rotation may still end with the old key before it).
  expect(keysOf(proxy.calls, INGESTER_CALLS)).toEqual(['Bearer key-one', 'Bearer key-two']);
  const workerKeys = keysOf(proxy.calls, WORKER_CALLS);
  expect(runs(workerKeys)).toEqual(['Bearer key-one', 'Bearer key-two']);
  const completions = proxy.calls.filter((c) => c.method === 'RespondActivityTaskCompleted');
  expect(completions.at(-1)?.headers.authorization).toBe('Bearer key-two');
  expect(processes.every((p) => p.child.exitCode === null)).toBe(true);
});

/** A CA and a server certificate naming only `temporal.relay.test` (no IP address). */
function nameOnlyCertificate(): { ca: string; cert: string; key: string } {
  const run = (args: string[]) =>
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  run([
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-subj',
    '/CN=envconfig test CA',
    '-days',
    '1',
    '-out',
    'ca.pem',
  ]);
  run(['req', ...ec, '-keyout', 'server.key', '-subj', '/CN=temporal.relay.test', '-out', 'server.csr']);
  fs.writeFileSync(path.join(dir, 'server.ext'), 'subjectAltName=DNS:temporal.relay.test\n');
  run(
    [
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '1',
    ].concat(['-extfile', 'server.ext', '-out', 'server.pem']),
  );
  return {
    ca: path.join(dir, 'ca.pem'),
    cert: path.join(dir, 'server.pem'),
    key: path.join(dir, 'server.key'),
  };
}

test('TEMPORAL_TLS_SERVER_NAME: the server’s certificate is checked against that name, not the address', async () => {
  const services = testServices();
  const pki = nameOnlyCertificate();
  front = await startTlsFront(services.temporalAddress, fs.readFileSync(pki.cert), fs.readFileSync(pki.key));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TEMPORAL_ADDRESS: front.address,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.ca,
    TEMPORAL_TLS_SERVER_NAME: 'temporal.relay.test',
    POIMEN_CLI_CONNECT_TIMEOUT_MS: '10000',
  };
  // The client's connection (a CLI command) and the worker's (the SDK's Rust core) both accept the certificate,
  // which does not name 127.0.0.1.
  const setup = await runCli(['temporal', 'setup'], env, 60_000);
  expect({ code: setup.code, stderr: setup.stderr }).toEqual({ code: 0, stderr: '' });
  const worker = await startRelayProcess('worker', { ...h.env, ...env }, `${h.tenant}-servername-worker`);
  processes.push(worker);
  expect(worker.child.exitCode).toBeNull();

  // Without the name, or with another, one line names TEMPORAL_TLS_SERVER_NAME.
  const { TEMPORAL_TLS_SERVER_NAME: _, ...unnamed } = env;
  const noName = await runCli(['temporal', 'setup'], unnamed, 60_000);
  expect(noName.stderr.trim()).toMatch(
    /^poimen-relay: .*TEMPORAL_TLS_SERVER_NAME is unset and the certificate of Temporal at \S+ does not name 127\.0\.0\.1 \(ERR_TLS_CERT_ALTNAME_INVALID\)$/,
  );
  const wrongName = await runCli(
    ['temporal', 'setup'],
    { ...env, TEMPORAL_TLS_SERVER_NAME: 'other.test' },
    60_000,
  );
  expect(wrongName.stderr.trim()).toMatch(
    /^poimen-relay: .*TEMPORAL_TLS_SERVER_NAME = "other\.test": is not a name in the certificate of Temporal at /,
  );
  // Exit 5, access refused (docs/cli.md#exit-codes), as for any TLS setting the server does not accept.
  expect([noName.code, wrongName.code]).toEqual([5, 5]);
});

describe('credentials Temporal refuses in part or in full (a server that checks permissions per call)', () => {
  const gates: GrpcProxy[] = [];
  const harnesses: Harness[] = [];
  afterAll(async () => {
    await Promise.all(harnesses.map((x) => x.cleanup()));
    await Promise.all(gates.map((g) => g.close()));
  });
  const gate = async (refuse: Record<string, number>) => {
    const g = await startGrpcProxy(testServices().temporalAddress, refuse);
    gates.push(g);
    return g;
  };
  const PERMISSION_DENIED = 7;
  const UNAUTHENTICATED = 16;

  test('allowed to start workflows but not to list search attributes (a namespace-scoped API key): the ingester checks them with a visibility query instead, and relays', async () => {
    const g = await createHarness();
    harnesses.push(g);
    const front = await gate({ ListSearchAttributes: PERMISSION_DENIED });
    processes.push(await startRelayProcess('worker', g.env, `${g.tenant}-gate-worker`));
    const ingester = await startRelayProcess(
      'ingest',
      { ...g.env, TEMPORAL_ADDRESS: front.address },
      `${g.tenant}-gate-ingest`,
    );
    processes.push(ingester);
    await g.publish(g.dispatchValue('through-the-gate'));
    await g.api.waitFor((a) => a.requestsFor('through-the-gate').length >= 1, 60_000, 'the dispatch');
    const methods = front.calls.map((c) => c.method);
    expect(methods).toContain('ListSearchAttributes');
    expect(methods).toContain('CountWorkflowExecutions');
    expect(methods).toContain('StartWorkflowExecution');
  });

  test('the same credential on a namespace without the attributes: the ingester refuses to start, with one line', async () => {
    const namespace = await bareNamespace('it-ns-gated');
    const front = await gate({ ListSearchAttributes: PERMISSION_DENIED });
    const refused = await runCli(
      ['ingest'],
      cliEnv({
        TEMPORAL_ADDRESS: front.address,
        TEMPORAL_NAMESPACE: namespace,
        METRICS_PORT: '0',
        DISPATCH_TOPIC_PATTERN: '^poimen\\.nothing-here\\.dispatch$',
      }),
      60_000,
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split('\n')).toEqual([
      `poimen-relay: search attributes TenantId, DispatchKey, WorkflowRef, GoalId are not all registered on namespace ${namespace} (a query naming them was refused as invalid); run: poimen-relay temporal setup`,
    ]);
  });

  test('a credential Temporal refuses outright (UNAUTHENTICATED on every call): one line naming the settings, not a wait', async () => {
    const front = await gate({ '*': UNAUTHENTICATED });
    const refused = await runCli(
      ['ingest'],
      cliEnv({
        TEMPORAL_ADDRESS: front.address,
        METRICS_PORT: '0',
        DISPATCH_TOPIC_PATTERN: '^poimen\\.nothing-here\\.dispatch$',
      }),
      60_000,
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^poimen-relay: invalid configuration: TEMPORAL_API_KEY\/TEMPORAL_TLS_CERT are refused by Temporal on namespace \S+ \(UNAUTHENTICATED: Request unauthorized \(ListSearchAttributes refused by the test\)\)$/,
      ),
    ]);
  });
  test('a credential that may start workflows but not read history: with admission on, one line at start, not slots held for good', async () => {
    const front = await gate({ GetWorkflowExecutionHistory: PERMISSION_DENIED });
    const env = {
      TEMPORAL_ADDRESS: front.address,
      METRICS_PORT: '0',
      DISPATCH_TOPIC_PATTERN: '^poimen\\.nothing-here\\.dispatch$',
    };
    const refused = await runCli(['ingest'], cliEnv(env), 60_000);
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^poimen-relay: invalid configuration: POIMEN_INGEST_MAX_OPEN needs the ingester's Temporal credentials to read workflow history on namespace \S+ to see dispatches close, and Temporal refused it \(PERMISSION_DENIED: Request unauthorized \(GetWorkflowExecutionHistory refused by the test\)\); .*POIMEN_INGEST_MAX_OPEN=0/,
      ),
    ]);
    expect(front.calls.map((c) => c.method)).not.toContain('StartWorkflowExecution');
  });
});
