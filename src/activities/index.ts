/**
 * The worker's activities, built by a factory from injected clients (nothing is created at import time):
 * the runs API call (./postRun) and the dead letter (./deadLetter).
 */
import type { Dispatcher } from 'undici';
import type { DlqSource } from '../contract';
import type { AttemptHistory } from '../contract/attempts';
import type { DlqPublisher } from '../kafka/dlqPublisher';
import type { SourceRecord } from '../kafka/sourceRecord';
import type { Logger } from '../logger';
import type { RelayMetrics } from '../metrics';
import type { DispatchInput } from '../contract/workflow';
import type { BreakerGate } from './breakerGate';
import { createDeadLetter } from './deadLetter';
import { createPostRun } from './postRun';

export interface ActivityDeps {
  dispatcher: Dispatcher;
  runsApi: { url: string; token?: string };
  userAgent: string;
  dlq: DlqPublisher;
  /** The process's circuit breaker on the runs API, shared by every attempt. */
  gate: BreakerGate;
  metrics: RelayMetrics;
  logger: Logger;
  /** The argument an execution was started with (read from its history), for a dead letter's payload. */
  startInput(workflowId: string, runId: string): Promise<DispatchInput>;
  /** The attempt history the execution's call ended with (read from its history), for a dead letter. */
  callHistory(workflowId: string, runId: string): Promise<AttemptHistory | undefined>;
  /** The dispatch's source record read back from Kafka; undefined when it is no longer there. */
  sourceRecord(at: DlqSource): Promise<SourceRecord | undefined>;
}

export function createActivities(deps: ActivityDeps) {
  return { ...createPostRun(deps), ...createDeadLetter(deps) };
}

export type RelayActivities = ReturnType<typeof createActivities>;
