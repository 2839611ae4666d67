/**
 * Each command provisions only what it needs: the stack (`stack up`, which the demo and the tests' global setup
 * call) Kafka's jars and the temporal CLI, never tctl, whose first build takes minutes. A cache already holding
 * all three shows which ones a command asks for: each asked-for artifact reports itself as cached.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadStackConfig } from '../../devstack/config';
import { kafkaLibsDir, provision, tctlBinPath, temporalBinPath } from '../../devstack/stack/provision';
import { LocalStack } from '../../devstack/stack/stack';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-provision-plan-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

/** A cache with Kafka's jars, the temporal CLI and tctl already in it (empty stand-ins: nothing runs them). */
function fullCache() {
  const cfg = loadStackConfig({
    POIMEN_CACHE_DIR: path.join(root, 'cache'),
    POIMEN_STATE_DIR: path.join(root, 'state'),
  });
  fs.mkdirSync(kafkaLibsDir(cfg), { recursive: true });
  fs.writeFileSync(path.join(path.dirname(kafkaLibsDir(cfg)), '.complete'), 'test');
  for (const bin of [temporalBinPath(cfg), tctlBinPath(cfg)]) {
    fs.mkdirSync(path.dirname(bin), { recursive: true });
    fs.writeFileSync(bin, '');
  }
  return cfg;
}

test('the stack the demo starts provisions Kafka and the temporal CLI, not tctl', async () => {
  const cfg = fullCache();
  const said: string[] = [];
  const binaries = await new LocalStack(cfg, (m) => said.push(m)).provision();
  expect(said).toEqual([
    expect.stringMatching(/^kafka \S+: cached in /),
    expect.stringMatching(/^temporal \S+: cached at /),
  ]);
  expect(binaries).toEqual({ kafkaLibsDir: kafkaLibsDir(cfg), temporalBin: temporalBinPath(cfg) });
});

test('tctl is provisioned when asked for (the tctl suite, `stack provision --tctl`)', async () => {
  const cfg = fullCache();
  const said: string[] = [];
  const binaries = await provision(cfg, (m) => said.push(m), { tctl: true });
  expect(said).toContainEqual(expect.stringMatching(/^tctl \S+: cached at /));
  expect(binaries.tctlBin).toBe(tctlBinPath(cfg));
});
