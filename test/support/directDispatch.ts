/**
 * A dispatch started straight on Temporal, without an ingester: the workflow input a test gives the relay's
 * worker when the test itself plays the ingester (its source coordinates and retry policy chosen by the test).
 */
import { topics } from '../../src/contract';
import type { DispatchInput, DispatchPolicy } from '../../src/contract/workflow';
import type { Harness } from './relayHarness';

export function directDispatchInput(
  harness: Harness,
  o: { key: string; offset?: number; policy: DispatchPolicy },
): DispatchInput {
  return {
    tenant: harness.tenant,
    dispatch: {
      workflow_ref: 'onboarding@v3',
      input_json: '{"user":42}',
      goal_id: 'g-1',
      dispatch_key: o.key,
    },
    source: {
      topic: topics.dispatch(harness.tenant),
      partition: 0,
      offset: String(o.offset ?? 0),
      timestamp: String(Date.now()),
    },
    policy: o.policy,
  };
}
