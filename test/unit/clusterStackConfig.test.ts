/**
 * The cluster profile's ports: derived from three settings, bounded so the real Temporal server can record them
 * (its membership table stores ports as smallint: a frontend at 47233 made the server die at start with
 * `value "47334" is out of range for type smallint`).
 */
import { loadStackConfig } from '../../src/config';
import { clusterPorts } from '../../src/devstack/stack/clusterPaths';

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
