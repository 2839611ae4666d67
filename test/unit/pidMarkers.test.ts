/**
 * A pid file names its process by a marker that must appear on the process's command line, so that a reused pid
 * is never taken for the daemon (and signalled by `stack down`). The dev profile's markers must not match a
 * cluster node's command line, which names folders inside the same state folder.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadStackConfig } from '../../devstack/config';
import { clusterPaths } from '../../devstack/stack/clusterPaths';
import { livePid } from '../../devstack/stack/processes';
import { devMarker } from '../../devstack/stack/services';
import { spawnIdler } from '../support/spawned';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pid-markers-'));
const children: ChildProcess[] = [];
afterAll(() => {
  children.forEach((c) => c.kill('SIGKILL'));
  fs.rmSync(dir, { recursive: true, force: true });
});

test('a dev pid file whose pid now belongs to a cluster node is not taken for the dev daemon', async () => {
  const cfg = loadStackConfig({ POIMEN_STATE_DIR: path.join(dir, 'state') });
  // What a cluster Kafka node's java command line carries: its folder inside the state folder.
  const nodeArg = `-Dpoimen.stack=${clusterPaths(cfg).kafkaDir(1)}`;
  const clusterNode = await spawnIdler({ seconds: 60, words: [nodeArg] }, children);
  for (const service of ['kafka', 'temporal'] as const) {
    const pidFile = path.join(dir, `${service}.pid`);
    fs.writeFileSync(
      pidFile,
      JSON.stringify({
        pid: clusterNode.pid,
        marker: devMarker(cfg, service),
        startedAt: new Date().toISOString(),
      }),
    );
    expect(livePid(pidFile)).toBeUndefined();
  }
  // The dev daemon itself is found by the same marker.
  const devArg = `-Dpoimen.stack=${devMarker(cfg, 'kafka')}`;
  const devKafka = await spawnIdler({ seconds: 60, words: [devArg] }, children);
  const pidFile = path.join(dir, 'dev-kafka.pid');
  fs.writeFileSync(
    pidFile,
    JSON.stringify({
      pid: devKafka.pid,
      marker: devMarker(cfg, 'kafka'),
      startedAt: new Date().toISOString(),
    }),
  );
  expect(livePid(pidFile)).toBe(devKafka.pid);
});
