/**
 * The ingester's start-up check that its Temporal credentials may read workflow history (src/temporal/
 * historyAccess.ts): admission sees closes only through history, so a refusal is one line at start, naming the
 * setting that turns admission off, and never a slot held forever.
 */
import type { Connection } from '@temporalio/client';
import { ConfigError } from '../../src/errors';
import { requireHistoryAccess } from '../../src/temporal/historyAccess';

const answering = (err?: { code: number; details: string }) =>
  ({
    workflowService: {
      getWorkflowExecutionHistory: async () => {
        if (err) throw Object.assign(new Error(err.details), err);
        return { history: { events: [] } };
      },
    },
  }) as unknown as Connection;

test('PERMISSION_DENIED or UNAUTHENTICATED: a ConfigError naming POIMEN_INGEST_MAX_OPEN and the way out', async () => {
  for (const code of [7, 16]) {
    const refused = requireHistoryAccess(answering({ code, details: 'Request unauthorized.\nmore' }), 'prod');
    await expect(refused).rejects.toBeInstanceOf(ConfigError);
    await expect(refused).rejects.toThrow(
      /POIMEN_INGEST_MAX_OPEN needs .* namespace prod .*\((PERMISSION_DENIED|UNAUTHENTICATED): Request unauthorized\.\); .*POIMEN_INGEST_MAX_OPEN=0/,
    );
  }
});

test('NOT_FOUND (the probe names no execution), an outage, or an answer: start goes on', async () => {
  await expect(requireHistoryAccess(answering({ code: 5, details: 'not found' }), 'prod')).resolves.toBe(
    undefined,
  );
  await expect(requireHistoryAccess(answering({ code: 14, details: 'unavailable' }), 'prod')).resolves.toBe(
    undefined,
  );
  await expect(requireHistoryAccess(answering(), 'prod')).resolves.toBe(undefined);
});
