/**
 * The worker's own word on its client-side attempt timeouts (RUNS_API_TIMEOUT_MS), read from its JSON log lines:
 * the one fault the API double cannot see, since it answered in full after the client had stopped listening.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { AttemptTimeout } from './account';

/** Attempt timeouts in one log's text: `code: "timeout"` lines with a dispatch key, at the line's time. */
export function attemptTimeoutsIn(text: string): AttemptTimeout[] {
  const out: AttemptTimeout[] = [];
  for (const line of text.split('\n')) {
    if (!line.includes('"timeout"')) continue;
    let rec: { code?: unknown; dispatch_key?: unknown; time?: unknown };
    try {
      rec = JSON.parse(line) as typeof rec;
    } catch {
      continue;
    }
    if (rec.code === 'timeout' && typeof rec.dispatch_key === 'string' && typeof rec.time === 'number') {
      out.push({ dispatchKey: rec.dispatch_key, atMs: rec.time });
    }
  }
  return out;
}

/** Attempt timeouts logged by the soak's workers (`chaos-<run>-worker-*.log`, appended across restarts). */
export function attemptTimeoutsOf(logsDir: string, run: string): AttemptTimeout[] {
  const prefix = `chaos-${run}-worker-`;
  return fs
    .readdirSync(logsDir)
    .filter((f) => f.startsWith(prefix) && f.endsWith('.log'))
    .flatMap((f) => attemptTimeoutsIn(fs.readFileSync(path.join(logsDir, f), 'utf8')));
}
