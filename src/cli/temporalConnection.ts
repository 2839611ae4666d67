import type { Connection } from '@temporalio/client';
import { type RelayConfig, loadRelayConfig } from '../config';
import { AccessRefusedError, ConfigError, UnreachableError } from '../errors';
import { checkTemporalTls, createClientConnection } from '../temporal/connection';
import { classifyTemporalError } from '../temporal/errors';
import { tcpProblem, within } from './reach';

/**
 * A single CLI call never legitimately takes this long; without a deadline the SDK retries an unavailable
 * server for ~20 s and waits on a silent one for ever.
 */
const REQUEST_TIMEOUT_MS = 30_000;

/**
 * For one-shot commands: a Temporal connection from the environment, closed afterwards. The first call (the
 * server's system info) must answer within the connect timeout; every later call has a deadline too. Failures
 * come out as one-line errors of the CLI's classes (unreachable, refused, not found).
 */
export async function withTemporal<T>(
  fn: (connection: Connection, cfg: RelayConfig) => Promise<T>,
): Promise<T> {
  const cfg = loadRelayConfig('cli');
  const { address } = cfg.temporal;
  const timeoutMs = cfg.cliConnectTimeoutMs;
  const unreachable = (why: string) => new UnreachableError(`Temporal at ${address} is unreachable (${why})`);
  const problem = await tcpProblem(address, timeoutMs);
  if (problem) throw unreachable(problem);
  try {
    await checkTemporalTls(cfg.temporal, timeoutMs);
  } catch (err) {
    // Certificates or an API key that do not fit the server: refused, not a typo in a flag.
    throw err instanceof ConfigError ? new AccessRefusedError(err.message) : err;
  }
  const connection = createClientConnection(cfg.temporal);
  try {
    // The SDK's retries may sleep past a deadline: the race keeps the promise of a few seconds.
    await within(
      connection.withDeadline(Date.now() + timeoutMs, () => connection.workflowService.getSystemInfo({})),
      timeoutMs,
      () => unreachable(`no answer within ${timeoutMs} ms`),
    );
    return await connection.withDeadline(Date.now() + REQUEST_TIMEOUT_MS, () => fn(connection, cfg));
  } catch (err) {
    throw classifyTemporalError(err, cfg.temporal);
  } finally {
    await connection.close().catch(() => undefined);
  }
}
