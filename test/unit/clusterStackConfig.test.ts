/**
 * The cluster profile's ports: derived from three settings, bounded so the real Temporal server can record them
 * (its membership table stores ports as smallint: a frontend at 47233 made the server die at start with
 * `value "47334" is out of range for type smallint`).
 */
import { loadStackConfig } from '../../devstack/config';
import { clusterPorts } from '../../devstack/stack/clusterPaths';

describe('the cluster profile ports', () => {
  test('a Temporal port whose membership ports would not fit a smallint is refused at start, naming the variable', () => {
    expect(() => loadStackConfig({ POIMEN_CLUSTER_TEMPORAL_PORT: '47233' })).toThrow(
      /POIMEN_CLUSTER_TEMPORAL_PORT/,
    );
    const highest = Math.max(
      ...[0, 1, 2, 3].map((i) =>
        clusterPorts(loadStackConfig({ POIMEN_CLUSTER_TEMPORAL_PORT: '32664' })).temporal.membership(i),
      ),
    );
    expect(highest).toBeLessThanOrEqual(32767);
  });

  test('the defaults: no port shared between the services, nor with the dev profile', () => {
    const cfg = loadStackConfig({});
    const p = clusterPorts(cfg);
    const all = [
      ...p.brokers.flatMap((b) => [b.port, b.controllerPort]),
      p.temporal.frontend,
      p.temporal.history,
      p.temporal.matching,
      p.temporal.worker,
      p.temporal.frontendHttp,
      ...[0, 1, 2, 3].map((i) => p.temporal.membership(i)),
      p.temporal.ui,
      p.temporal.metrics,
      p.postgres,
      cfg.kafkaPort,
      cfg.kafkaControllerPort,
      cfg.temporalPort,
      cfg.temporalUiPort,
      cfg.temporalMetricsPort,
    ];
    expect(new Set(all).size).toBe(all.length);
  });
});

describe('ports taken by someone else', () => {
  test('a derived port (a Temporal membership port, a controller port) in use stops the start with one line naming it, before anything starts', async () => {
    const net = await import('node:net');
    const fs = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const { ClusterStack } = await import('../../devstack/stack/clusterStack');
    const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-ports-'));
    // Ports of their own, far from any stack this machine runs.
    const cfg = loadStackConfig({
      POIMEN_STATE_DIR: state,
      POIMEN_CLUSTER_TEMPORAL_PORT: '31233',
      POIMEN_CLUSTER_KAFKA_PORT: '31592',
      POIMEN_CLUSTER_POSTGRES_PORT: '31532',
    });
    const p = clusterPorts(cfg);
    const squatters: import('node:net').Server[] = [];
    const squat = (port: number) =>
      new Promise<void>((resolve) => {
        const server = net.createServer().listen(port, '127.0.0.1', () => resolve());
        squatters.push(server);
      });
    try {
      const stack = new ClusterStack(cfg);
      await squat(p.temporal.membership(2));
      await expect(stack.startServices(['temporal'])).rejects.toThrow(
        `temporal: port ${p.temporal.membership(2)} is already in use by a process this stack did not start`,
      );
      await squat(p.brokers[1]!.controllerPort);
      await expect(stack.startServices(['kafka-2'])).rejects.toThrow(
        `kafka-2: port ${p.brokers[1]!.controllerPort} is already in use`,
      );
      // Nothing was started: no pid file was written.
      const run = path.join(state, 'cluster', 'run');
      expect(fs.existsSync(run) ? fs.readdirSync(run) : []).toEqual([]);
    } finally {
      await Promise.all(squatters.map((s) => new Promise((r) => s.close(r))));
      fs.rmSync(state, { recursive: true, force: true });
    }
  });
});
