/**
 * The dev profile's Temporal is one history shard; devstack/stack/devServerTuning.ts gives it the transfer
 * queue read rate of the cluster profile's 8 shards, whatever else is on (the fairness bench measures the effect).
 */
import { loadStackConfig } from '../../devstack/config';
import { devServerDynamicConfigValues, devServerTuning } from '../../devstack/stack/devServerTuning';

test("the dev server reads its one shard's transfer queue at the cluster profile's 8 shards × 20 = 160/s, with fairness on or off, and the operator's own values come last so they win", () => {
  const off = devServerDynamicConfigValues({
    temporalFairness: false,
    temporalDynamicConfig: [],
    cluster: { historyShards: 8 },
  });
  expect(off).toEqual(['frontend.enableServerVersionCheck=false', 'history.transferProcessorMaxPollRPS=160']);

  const on = devServerDynamicConfigValues({
    temporalFairness: true,
    temporalDynamicConfig: ['history.transferProcessorMaxPollRPS=20'],
    cluster: { historyShards: 8 },
  });
  expect(on).toEqual([
    'frontend.enableServerVersionCheck=false',
    'history.transferProcessorMaxPollRPS=160',
    'matching.enableFairness=true',
    'matching.useNewMatcher=true',
    'history.transferProcessorMaxPollRPS=20',
  ]);
  // The stack's own cluster profile is what the figure follows.
  expect(devServerTuning(loadStackConfig({}))).toEqual({ 'history.transferProcessorMaxPollRPS': 160 });
});
