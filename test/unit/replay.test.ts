/**
 * Determinism: every recorded `dispatch` history (test/fixtures/histories, recorded from real executions by
 * it_temporal_ops with POIMEN_RECORD_HISTORIES=1) replays against the current workflow code. A change to the
 * workflow that would break executions already running in production (another activity call, a reordered
 * dead letter, a different command sequence) fails here with a DeterminismViolationError, without services.
 */
import path from 'node:path';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { type HistoryFixture, loadHistoryFixtures } from '../support/histories';

jest.setTimeout(120_000);

const fixtures = loadHistoryFixtures();
const outcomes = new Map<string, { error?: Error }>();
/** The same histories replayed by the workflows with OpenTelemetry's interceptors (tracing switched on). */
const tracedOutcomes = new Map<string, { error?: Error }>();

beforeAll(async () => {
  // The replay worker's lifecycle lines are noise here; failures come back as results.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  // One replay worker, one workflow bundle, for all histories.
  const replayed = Worker.runReplayHistories(
    { workflowsPath: require.resolve('../../src/workflows') },
    fixtures.map((f) => ({ workflowId: f.workflowId, history: f.history })),
  );
  let i = 0;
  for await (const result of replayed) {
    const fixture = fixtures[i++]!;
    expect(result.workflowId).toBe(fixture.workflowId);
    outcomes.set(fixture.name, result.error ? { error: result.error } : {});
  }
  // A worker started with tracing on replays executions that began without it (and without its header).
  const traced = Worker.runReplayHistories(
    {
      workflowsPath: require.resolve('../../src/workflows'),
      interceptors: {
        workflowModules: [
          require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
        ],
      },
    },
    fixtures.map((f) => ({ workflowId: f.workflowId, history: f.history })),
  );
  let j = 0;
  for await (const result of traced) {
    tracedOutcomes.set(fixtures[j++]!.name, result.error ? { error: result.error } : {});
  }
});

test('@temporalio/* share one protobufjs copy (their JSON history converters accept only its message types)', () => {
  const copies = new Set(
    ['common', 'proto', 'worker'].map((sdk) =>
      require.resolve('protobufjs', {
        paths: [path.dirname(require.resolve(`@temporalio/${sdk}/package.json`))],
      }),
    ),
  );
  expect([...copies]).toEqual([require.resolve('protobufjs')]);
});

const OUTCOMES = [
  'completed-created',
  'completed-after-503-retries',
  'completed-existing-after-lost-answer',
  'completed-existing-after-worker-crash',
  'completed-after-reset',
  'failed-rejected-422',
  'failed-retries-exhausted',
];
/**
 * Outcomes only this version has: a spent budget, a call whose input over 32 KiB runs on the -large queue, and a
 * call held while the tenant was paused, then completed or dead-lettered.
 */
const BUDGET_OUTCOMES = [
  'failed-budget-spent',
  'completed-large-input',
  'completed-after-hold',
  'failed-after-hold',
  'completed-after-failed-look',
  'completed-after-second-hold',
];

test('the fixtures cover every dispatch outcome, as this version records them and as the versions before did', () => {
  expect(fixtures.map((f) => f.name)).toEqual(
    expect.arrayContaining([
      ...OUTCOMES,
      ...BUDGET_OUTCOMES,
      // Before the retry budget (attempt counts only), and before that, before the input travelled as text.
      ...OUTCOMES.map((o) => `attempt-count/${o}`),
      ...OUTCOMES.map((o) => `input-parsed/${o}`),
    ]),
  );
});

test.each(fixtures.map((f): [string, HistoryFixture] => [f.name, f]))(
  'history %s replays without a determinism error',
  (name, fixture) => {
    expect(fixture.workflowId).toMatch(/^dispatch:/);
    const outcome = outcomes.get(name);
    expect(outcome).toBeDefined();
    const error = outcome!.error;
    expect(error ? `${error.constructor.name}: ${error.message}` : undefined).toBeUndefined();
  },
);

test.each(fixtures.map((f): [string, HistoryFixture] => [f.name, f]))(
  'history %s replays with the tracing interceptors too',
  (name) => {
    const outcome = tracedOutcomes.get(name);
    expect(outcome).toBeDefined();
    const error = outcome!.error;
    expect(error ? `${error.constructor.name}: ${error.message}` : undefined).toBeUndefined();
  },
);
