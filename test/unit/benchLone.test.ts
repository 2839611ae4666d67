/**
 * The lone fairness rounds over their runs (tools/bench/fairnessPhase.ts): the median runs per second is one run's
 * figure, while CPU per dispatch and what admission kept open are over every run, not the median run's alone.
 */
import { medianLone } from '../../tools/bench/fairnessPhase';

const cpu = (ingester: number, temporal: number) => ({
  ingester,
  worker: 0,
  temporal,
  postgres: null,
  kafka: 0,
});

/** One lone run of 10 records: how many it served at what rate, its CPU, open samples and closes seen. */
const run = (
  served: number,
  runs_per_s: number,
  [ingester, temporal]: [number, number],
  open_samples: number[],
  closes_seen: { visibility: number; long_poll: number; settled: boolean } | null,
) => ({ n: 10, served, runs_per_s, cpu_ms: cpu(ingester, temporal), open_samples, closes_seen });

test('CPU per dispatch and the open samples pool every run; the rate is the median run', () => {
  const l = medianLone([
    run(10, 50, [30, 200], [100, 120], { visibility: 9, long_poll: 1, settled: true }),
    run(10, 40, [10, 100], [80], null),
    run(20, 60, [20, 300], [250, 190], { visibility: 0, long_poll: 20, settled: false }),
  ]);
  expect(l).toEqual({
    n: 10,
    runs: 3,
    runs_per_s: 50,
    runs_per_s_each: [50, 40, 60],
    // (30 + 10 + 20) / 40 dispatches, (200 + 100 + 300) / 40.
    cpu_ms_per_dispatch: { ingester: 1.5, worker: 0, temporal: 15, postgres: null, kafka: 0 },
    open_while_backlogged: { min: 80, median: 120, max: 250, samples: 5 },
    // Summed over the runs that could read the counter; settled only if every one of them was.
    closes_seen: { visibility: 9, long_poll: 21, runs: 2, settled: false },
  });
});

test('without admission nothing is counted open and no close is seen: null, not zero', () => {
  const l = medianLone([
    { n: 1, served: 1, runs_per_s: 1, cpu_ms: cpu(1, 1), open_samples: [], closes_seen: null },
  ]);
  expect(l.open_while_backlogged).toBeNull();
  expect(l.closes_seen).toBeNull();
});
