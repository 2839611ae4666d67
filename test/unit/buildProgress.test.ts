/**
 * Long builds (the temporal CLI, tctl, Kafka's jars) say every 10 s how long they have been running and how far
 * they got, counted from the build tool's own output. Clock and ticker are injected.
 */
import { BUILD_REPORT_INTERVAL_MS, formatElapsed, watchBuild } from '../../devstack/stack/buildProgress';

function fakeTicker() {
  const state = { intervalMs: 0, tick: (): void => undefined, cancelled: false };
  const every = (ms: number, tick: () => void) => {
    state.intervalMs = ms;
    state.tick = tick;
    return () => {
      state.cancelled = true;
    };
  };
  return { state, every };
}

describe('build progress', () => {
  test('a go build reports elapsed time, modules downloaded, packages built and the last one, at each tick', () => {
    let t = 1_000_000;
    const said: string[] = [];
    const { state, every } = fakeTicker();
    const watch = watchBuild('tctl v1.18.0', (m) => said.push(m), { now: () => t, every });
    expect(state.intervalMs).toBeLessThanOrEqual(10_000);

    t += 10_000;
    state.tick();
    expect(said).toEqual(['tctl v1.18.0: 10 s, nothing downloaded or compiled yet']);

    for (const line of [
      'go: creating new go.mod: module poimen.local/tctl-build',
      'go: downloading github.com/temporalio/tctl v1.18.0',
      'go: downloading go.temporal.io/api v1.5.0',
      'go: added github.com/temporalio/tctl v1.18.0',
      'internal/goarch',
      'runtime',
      'go.temporal.io/api/enums/v1',
    ])
      watch.line(line);
    t += 65_000;
    state.tick();
    expect(said[1]).toBe(
      'tctl v1.18.0: 1m 15s, 2 modules downloaded, 3 packages built (last: go.temporal.io/api/enums/v1)',
    );

    t += 5_000;
    expect(watch.stop()).toBe('1m 20s, 2 modules downloaded, 3 packages built');
    expect(state.cancelled).toBe(true);
    t += 60_000;
    expect(watch.stop()).toBe('1m 20s, 2 modules downloaded, 3 packages built');
  });

  test("maven's downloads count as artifacts; its other lines count as nothing", () => {
    const said: string[] = [];
    const { state, every } = fakeTicker();
    let t = 0;
    const watch = watchBuild('kafka 4.1.1', (m) => said.push(m), { now: () => t, every });
    for (const line of [
      '[INFO] Scanning for projects...',
      '[INFO] Downloading from central: https://repo.maven.apache.org/maven2/org/apache/kafka/kafka_2.13/4.1.1/kafka_2.13-4.1.1.pom',
      '[INFO] Downloaded from central: https://repo.maven.apache.org/maven2/org/apache/kafka/kafka_2.13/4.1.1/kafka_2.13-4.1.1.pom (4.1 kB at 40 kB/s)',
      '[INFO] Downloaded from central: https://repo.maven.apache.org/maven2/org/apache/kafka/kafka-clients/4.1.1/kafka-clients-4.1.1.jar (2.1 MB at 3 MB/s)',
      '[INFO] BUILD SUCCESS',
    ])
      watch.line(line);
    t = 20_000;
    state.tick();
    expect(said).toEqual(['kafka 4.1.1: 20 s, 2 artifacts downloaded (last: kafka-clients-4.1.1.jar)']);
  });

  test('with the default ticker, a report every 10 s until stopped', () => {
    jest.useFakeTimers();
    try {
      const said: string[] = [];
      const watch = watchBuild('temporal v1.5.1', (m) => said.push(m));
      watch.line('net/http');
      jest.advanceTimersByTime(BUILD_REPORT_INTERVAL_MS * 3);
      expect(said).toEqual([
        'temporal v1.5.1: 10 s, 1 package built (last: net/http)',
        'temporal v1.5.1: 20 s, 1 package built (last: net/http)',
        'temporal v1.5.1: 30 s, 1 package built (last: net/http)',
      ]);
      watch.stop();
      jest.advanceTimersByTime(BUILD_REPORT_INTERVAL_MS * 3);
      expect(said).toHaveLength(3);
    } finally {
      jest.useRealTimers();
    }
  });

  test('elapsed time reads as seconds, then minutes and seconds', () => {
    expect([formatElapsed(9_999), formatElapsed(59_000), formatElapsed(125_000)]).toEqual([
      '9 s',
      '59 s',
      '2m 05s',
    ]);
  });
});
