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

test('CPU per dispatch and the open samples pool every run; the rate is the median run', () => {
  const l = medianLone([
    {
      n: 10,
      served: 10,
      runs_per_s: 50,
      cpu_ms: cpu(30, 200),
      open_samples: [100, 120],
      closes_seen: { visibility: 9, long_poll: 1 },
    },
    { n: 10, served: 10, runs_per_s: 40, cpu_ms: cpu(10, 100), open_samples: [80], closes_seen: null },
    {
      n: 10,
      served: 20,
      runs_per_s: 60,
      cpu_ms: cpu(20, 300),
      open_samples: [250, 190],
      closes_seen: { visibility: 0, long_poll: 20 },
    },
  ]);
  expect(l).toEqual({
    n: 10,
    runs: 3,
    runs_per_s: 50,
    runs_per_s_each: [50, 40, 60],
    // (30 + 10 + 20) / 40 dispatches, (200 + 100 + 300) / 40.
    cpu_ms_per_dispatch: { ingester: 1.5, worker: 0, temporal: 15, postgres: null, kafka: 0 },
    open_while_backlogged: { min: 80, median: 120, max: 250, samples: 5 },
    // Summed over the runs that could read the counter.
    closes_seen: { visibility: 9, long_poll: 21 },
  });
});

test('without admission nothing is counted open and no close is seen: null, not zero', () => {
  const l = medianLone([
    { n: 1, served: 1, runs_per_s: 1, cpu_ms: cpu(1, 1), open_samples: [], closes_seen: null },
  ]);
  expect(l.open_while_backlogged).toBeNull();
  expect(l.closes_seen).toBeNull();
});
