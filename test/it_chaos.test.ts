/**
 * The chaos soak (quick size): dispatches with ~10 % duplicates and ~2 % malformed records are
 * published while the ingester, both workers, the Kafka broker and the Temporal server (SQLite) are killed
 * with SIGKILL and restarted, and the runs API answers ~20 % 503s and drops sockets. `npm run chaos` runs
 * the same soak at 10,000 dispatches; its summary is committed under tools/results/.
 */
import path from 'node:path';
import { SOAK_SIZES, soakVerdict } from '../tools/chaos/sizes';
import { type SoakResult, runSoak } from '../tools/chaos/soak';
import { startService, stopService } from './support/faults';
import { testServices } from './support/testEnv';

const LOGS = path.resolve(__dirname, '..', 'test-artifacts', 'logs');

describe('chaos soak (quick): two ingesters, kill -9 of every part, 503s and dropped sockets', () => {
  let result: SoakResult;

  beforeAll(async () => {
    const services = testServices();
    result = await runSoak({
      kafkaBrokers: services.kafkaBrokers.join(','),
      temporalAddress: services.temporalAddress,
      namespace: services.namespace,
      logsDir: LOGS,
      services: { kill: (name) => stopService(name, 'SIGKILL'), start: (name) => startService(name) },
      ...SOAK_SIZES.quick,
      progress: (m) => process.stderr.write(`[chaos] ${m}\n`),
    });
    process.stderr.write(`[chaos] ${JSON.stringify(result)}\n`);
  }, 15 * 60_000);

  it('killed an ingester of two, a worker, the broker and the Temporal server while traffic flowed', () => {
    expect(result.settings.ingesters).toBeGreaterThanOrEqual(2);
    expect(result.kills.ingester).toBeGreaterThan(0);
    expect(result.kills.worker).toBeGreaterThan(0);
    expect(result.kills.kafka).toBeGreaterThan(0);
    expect(result.kills.temporal).toBeGreaterThan(0);
    expect(result.api.unavailable_503).toBeGreaterThan(0);
    expect(result.api.dropped).toBeGreaterThan(0);
    expect(result.duplicates).toBeGreaterThan(0);
  });

  it('gives every valid unique dispatch_key exactly one run', () => {
    expect(result.unique_valid).toBeGreaterThan(400);
    expect({ runs: result.runs, lost: result.lost }).toEqual({ runs: result.unique_valid, lost: 0 });
    expect(result.duplicate_runs).toBe(0);
    expect(result.duplicate_executions).toBe(0);
  });

  it('calls the API again for a dispatch only after a fault that lost its answer (every 409 explained)', () => {
    // The double's dedup answers 409 to any repeat, so "one run per key" alone cannot catch a relay that POSTs
    // twice: each 409 must be tied to an answer dropped after admission, or to an answer that arrived just
    // before a worker was killed or while Temporal was away (its result may not have been recorded).
    expect(result.dedup.dedup_409).toBe(result.api.dedup_409);
    expect(result.dedup.unexplained_keys).toEqual([]);
    expect(result.dedup.unexplained).toBe(0);
    expect(result.dedup.dedup_409).toBeLessThanOrEqual(result.dedup.bound);
  });

  it('dead-letters every malformed record with its reason, and no valid one', () => {
    expect(result.malformed).toBeGreaterThan(0);
    expect(result.dlq_malformed_matched).toBe(result.malformed);
    expect(result.dlq_without_reason).toBe(0);
    expect(result.dlq_unexpected).toBe(0);
  });

  it('dead-letters each malformed record once by id, except where a kill or rebalance rewound its partition', () => {
    // The whole DLQ topic is read to its end, so a repeat cannot hide behind a count.
    expect(result.dlq_account.dlq_ids).toBe(result.malformed);
    expect(result.dlq_account.dlq_repeats).toBe(result.dlq - result.dlq_account.dlq_ids);
    expect(result.dlq_account.dlq_repeats_unexplained).toBe(0);
  });

  it('leaves no execution Running and no consumer group lag', () => {
    expect(result.drained).toBe(true);
    expect(result.executions_running).toBe(0);
    expect(result.consumer_group_lag).toBe(0);
    expect(result.committed_at_log_end).toBe(true);
    expect(soakVerdict(result)).toEqual([]);
  });
});
