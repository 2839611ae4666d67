/**
 * What the worker's activities are given (./index builds them from it): the runs API client and its breaker, the
 * DLQ publisher, metrics and logger, and the readers of an execution's history and of its source record. Its own
 * module: the activities import it, and ./index imports the activities.
 */
import type { Dispatcher } from 'undici';
import type { DlqSource } from '../contract';
import type { TenantPause } from '../contract/tenantPause';
import type { AttemptHistory } from '../contract/attempts';
import type { DlqPublisher } from '../kafka/dlqPublisher';
import type { SourceRecord } from '../kafka/sourceRecord';
import type { Logger } from '../logger';
import type { RelayMetrics } from '../metrics';
import type { StartedWith } from '../temporal/history';
import type { BreakerGate } from './breakerGate';

export interface ActivityDeps {
  dispatcher: Dispatcher;
  runsApi: { url: string; token?: string };
  userAgent: string;
  dlq: DlqPublisher;
  /** The process's circuit breaker on the runs API, shared by every attempt. */
  gate: BreakerGate;
  metrics: RelayMetrics;
  logger: Logger;
  /** What an execution was started with (read from its history), for a dead letter's payload and redrive count. */
  startedWith(workflowId: string, runId: string): Promise<StartedWith>;
  /**
   * The attempt history the execution's call ended with (read from its history), for a dead letter; `through`: the
   * attempts made (a call after a hold may not hold the earlier ones: they are then read from the held failure).
   */
  callHistory(workflowId: string, runId: string, through?: number): Promise<AttemptHistory | undefined>;
  /**
   * The tenant's pause while it is paused, as the worker last read it from the pause topic it follows (also while
   * that follow is broken); undefined when it is not.
   */
  tenantPause(tenant: string): TenantPause | undefined;
  /**
   * The dispatch's source record read back from Kafka; undefined when it is no longer there. Rejects once `signal`
   * aborts, and then no longer holds a place among the reads.
   */
  sourceRecord(at: DlqSource, signal: AbortSignal): Promise<SourceRecord | undefined>;
}
