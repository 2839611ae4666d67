/**
 * Records `dispatch` histories from real executions into test/fixtures/histories/ when
 * POIMEN_RECORD_HISTORIES=1 (the integration test that produces them says which outcomes they cover).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { HISTORIES_DIR, historyToJson } from './histories';

export function recordingHistories(): boolean {
  return process.env.POIMEN_RECORD_HISTORIES === '1';
}

/** The execution's full history as proto JSON (the format of `temporal workflow show -o json`). */
export async function historyJson(client: Client, workflowId: string, runId?: string): Promise<unknown> {
  return historyToJson(await client.workflow.getHandle(workflowId, runId).fetchHistory());
}

/**
 * Writes one fixture, `<name>.json`, replacing an older recording of the same outcome, formatted by the
 * repository's prettier (its CLI: prettier's API needs ESM dynamic imports, which jest's VM does not allow).
 */
export function writeHistoryFixture(name: string, history: unknown, dir: string = HISTORIES_DIR): string {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.json`);
  fs.writeFileSync(file, `${JSON.stringify(history, null, 2)}\n`);
  const prettier = path.join(path.dirname(require.resolve('prettier/package.json')), 'bin', 'prettier.cjs');
  execFileSync(process.execPath, [prettier, '--log-level', 'warn', '--write', file], { stdio: 'inherit' });
  return file;
}
