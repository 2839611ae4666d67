/**
 * The cluster profile's Temporal Web UI: temporalio/ui-server (the dev server embeds the same UI), a Go binary
 * with the UI's assets inside, pointed at the cluster's frontend. It starts even while the frontend is down and
 * answers its API with 503 until Temporal is back.
 */
import fs from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import type { StackConfig } from '../config';
import { clusterPaths, clusterPorts } from './clusterPaths';
import { startDaemon } from './processes';
import { ensureDir } from './provision';
import { clusterBinaryPaths } from './provisionCluster';
import type { Service } from './services';

export function uiService(cfg: StackConfig): Service {
  const p = clusterPaths(cfg);
  const ports = clusterPorts(cfg);
  const address = `127.0.0.1:${ports.temporal.ui}`;
  const dir = path.join(p.root, 'ui');
  return {
    name: 'ui',
    address,
    pidFile: path.join(p.runDir, 'ui.pid'),
    logFile: path.join(p.logsDir, 'ui.log'),
    detail: () => `Temporal Web UI http://${address}`,
    async start() {
      ensureDir(path.join(dir, 'config'));
      ensureDir(p.logsDir);
      ensureDir(p.runDir);
      fs.writeFileSync(
        path.join(dir, 'config', 'base.yaml'),
        stringify({
          temporalGrpcAddress: `127.0.0.1:${ports.temporal.frontend}`,
          host: '127.0.0.1',
          port: ports.temporal.ui,
          enableUi: true,
          defaultNamespace: cfg.namespace,
          // Offline: no check for a newer UI.
          notifyOnNewVersion: false,
          hideLogs: true,
          cors: { cookieInsecure: true },
        }),
      );
      await startDaemon({
        cmd: clusterBinaryPaths(cfg).uiServer,
        args: ['--root', dir, 'start'],
        cwd: dir,
        logFile: path.join(p.logsDir, 'ui.log'),
        pidFile: path.join(p.runDir, 'ui.pid'),
        marker: dir,
      });
    },
    async isReady() {
      try {
        const res = await fetch(`http://${address}/api/v1/namespaces`, { signal: AbortSignal.timeout(2000) });
        return res.ok;
      } catch {
        return false;
      }
    },
  };
}
