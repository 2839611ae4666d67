/**
 * What the Temporal Web UI shows for each dispatch execution (user metadata, set at start): a one-line summary in
 * the workflow list, and details on the execution page saying where the record came from and what the relay does
 * with it. Built from producer-supplied text, so each value is flattened to one line, stripped of Markdown's code
 * and link characters, and cut short: the UI renders Markdown, and a producer must not be able to put a link there.
 */
import type { DispatchInput } from '../workflows/types';
import { topics } from '../contract/names';
import { printable } from '../printable';

const MAX_VALUE_CHARS = 120;

/** One line of plain text: no control characters, no Markdown code or link syntax, at most MAX_VALUE_CHARS. */
export function plainText(value: string): string {
  const flat = printable(value)
    .replace(/[`[\]<>()*_\\]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return flat.length > MAX_VALUE_CHARS ? `${flat.slice(0, MAX_VALUE_CHARS - 1)}…` : flat;
}

/** `acme · onboarding@v3 · d-0001`: tenant, workflow_ref, dispatch_key. */
export function dispatchSummary(input: DispatchInput): string {
  return [input.tenant, input.dispatch.workflow_ref, input.dispatch.dispatch_key].map(plainText).join(' · ');
}

function duration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${Math.round(ms / 1000)} s`;
}

export function dispatchDetails(input: DispatchInput): string {
  const { tenant, dispatch, source, policy } = input;
  const recordTime = Number(source.timestamp);
  const goal = dispatch.goal_id === null ? 'no goal' : `goal ${plainText(dispatch.goal_id)}`;
  const retries =
    policy?.maxDurationMs !== undefined
      ? `retrying for up to ${duration(policy.maxDurationMs)} from the first attempt${policy.attemptCap ? ` or ${policy.attemptCap} attempts` : ''}`
      : `retrying up to ${policy?.maxAttempts ?? 10} attempts`;
  return [
    `**Source record**: ${plainText(source.topic)} partition ${source.partition} offset ${plainText(source.offset)}` +
      (Number.isFinite(recordTime) ? `, written ${new Date(recordTime).toISOString()}` : ''),
    `**What the relay does**: POST /v1/runs for workflow ${plainText(dispatch.workflow_ref)} (${goal}) with` +
      ` idempotency key ${plainText(dispatch.dispatch_key)}, ${retries}. If the runs API refuses it for good or the` +
      ` retries run out, a dead letter goes to ${topics.dlq(tenant)} and this execution ends Failed.`,
    `**Attempts**: the pending activity's heartbeat details list every attempt so far (poimen-relay dispatch status` +
      ` --tenant ${plainText(tenant)} --key ${plainText(dispatch.dispatch_key)}).`,
  ].join('\n\n');
}
