/**
 * An idle child process with a chosen command line, for tests that find processes through /proc. `sleep` will
 * not do: given extra words to carry on its command line it exits at once ("invalid time interval"), so a test
 * that reads /proc/<pid>/cmdline passes only while it wins the race against that exit (CI lost it). The child is
 * Node idling for `seconds`, then exiting 0; the call returns once its command line is readable.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { waitFor } from './wait';

export interface Idler {
  /** Seconds before it exits by itself, with code 0. */
  seconds: number;
  /** What /proc/<pid>/cmdline starts with (a process's own name for itself). */
  argv0?: string;
  /** Words carried on its command line after the script. */
  words?: string[];
  cwd?: string;
}

export async function spawnIdler(idler: Idler, children: ChildProcess[]): Promise<ChildProcess> {
  const words = idler.words ?? [];
  const script = `setTimeout(() => {}, ${Math.round(idler.seconds * 1000)})`;
  const child = spawn(process.execPath, ['-e', script, '--', ...words], {
    cwd: idler.cwd,
    stdio: 'ignore',
    argv0: idler.argv0,
  });
  children.push(child);
  const pid = child.pid;
  if (pid === undefined) throw new Error('could not spawn an idle node process');
  await waitFor(
    () => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').includes(script);
      } catch {
        return false;
      }
    },
    { timeoutMs: 10_000, intervalMs: 5, what: `an idle process (${words.join(' ')}) to exec` },
  );
  return child;
}
