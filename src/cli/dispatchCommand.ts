/** `poimen-relay dispatch status`: wiring only. */
import { Client } from '@temporalio/client';
import { Command } from 'commander';
import { ATTEMPTS_KEPT_FIRST, type AttemptEntry } from '../contract/attempts';
import { EXIT } from '../errors';
import { printable } from '../printable';
import { dispatchStatus } from '../ops/dispatchStatus';
import { validateTenants } from '../ops/topics';
import { withTemporal } from './temporalConnection';

/** One row per attempt, oldest first: number, time, HTTP status (- for none), duration, error. */
function attemptsTable(attempts: AttemptEntry[], omitted: number): string {
  const lines = ['attempts', '     #  at                        status  duration   error'];
  attempts.forEach((a, i) => {
    if (omitted > 0 && i === ATTEMPTS_KEPT_FIRST) lines.push(`   … ${omitted} attempts left out`);
    const duration = a.duration_ms === null ? '-' : `${a.duration_ms} ms`;
    lines.push(
      `  ${String(a.attempt).padStart(4)}  ${printable(a.at ?? '-').padEnd(25)} ${String(a.http_status ?? '-').padEnd(7)} ${duration.padEnd(10)} ${printable(a.error ?? '')}`,
    );
  });
  return `${lines.join('\n')}\n`;
}

export function dispatchCommand(): Command {
  const dispatch = new Command('dispatch').description('inspect one dispatch');
  dispatch
    .command('status')
    .description('workflow state, attempts, last error and HTTP status, next retry, Web UI link')
    .requiredOption('--tenant <tenant>', 'tenant')
    .requiredOption('--key <dispatch_key>', 'dispatch_key')
    .option('--json', 'print JSON')
    .action(async (opts: { tenant: string; key: string; json?: boolean }) => {
      validateTenants([opts.tenant]);
      const s = await withTemporal((connection, cfg) =>
        dispatchStatus(
          new Client({ connection, namespace: cfg.temporal.namespace }),
          cfg.temporal.uiUrl,
          cfg.temporal.namespace,
          opts.tenant,
          opts.key,
        ),
      );
      if (opts.json) process.stdout.write(`${JSON.stringify(s, null, 2)}\n`);
      else if (!s.found)
        process.stdout.write(
          `${s.workflow_id}: no execution (not ingested yet, or past Temporal's retention)\n`,
        );
      else {
        const rows: [string, string | number | null][] = [
          ['workflow', `${s.workflow_id} (run ${s.run_id})`],
          ['status', s.status],
          ['started', s.started_at],
          ['closed', s.closed_at],
          [
            'attempt',
            s.attempt === null ? null : `${s.attempt}${s.max_attempts ? ` of ${s.max_attempts}` : ''}`,
          ],
          ['activity', s.activity_state],
          [
            'held',
            s.held
              ? `tenant paused since ${s.held.paused_since}${s.held.reason ? ` (${s.held.reason})` : ''}: the call waits for \`tenant resume\`, its budget stopped`
              : null,
          ],
          [
            'breaker',
            s.waiting_on_breaker
              ? `waiting: runs API circuit open since ${s.breaker_open_since ?? '?'}`
              : null,
          ],
          [
            'budget left',
            s.budget_ends_at === null ? null : `${s.budget_left_s} s (retries end ${s.budget_ends_at})`,
          ],
          ['last error', s.last_error],
          ['http status', s.http_status],
          ['next retry', s.next_retry_at],
          ['result', s.result ? JSON.stringify(s.result) : null],
          ['web ui', s.web_ui],
        ];
        for (const [k, v] of rows) {
          if (v !== null && v !== '') process.stdout.write(`${k.padEnd(12)} ${printable(String(v))}\n`);
        }
        if (s.attempts.length > 0) process.stdout.write(attemptsTable(s.attempts, s.attempts_omitted));
      }
      // The answer is no: not an error line, a status code scripts can test.
      if (!s.found) process.exitCode = EXIT.notFound;
    });
  return dispatch;
}
