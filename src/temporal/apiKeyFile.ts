/**
 * TEMPORAL_API_KEY_FILE: the key a mounted secret holds, re-read when the file changes, so a rotated key is sent
 * from the next call on without a restart. Read again every second and compared (a few bytes): a Kubernetes secret
 * volume swaps a symlink above the file, which a watch on the file itself does not see, and a stat watcher misses
 * a change made before its first look. A file that is briefly empty or unreadable during a rotation keeps the key
 * in use.
 */
import { readApiKeyFile } from '../config/temporalEnv';
import type { Logger } from '../logger';

const POLL_INTERVAL_MS = 1000;

export class ApiKeyFile {
  private key: string;
  private readonly listeners = new Set<(key: string) => void>();
  private readonly timer: NodeJS.Timeout;
  /** How many times the file was read again since the start. */
  rereads = 0;

  constructor(
    readonly file: string,
    private readonly log?: Logger,
    pollMs = POLL_INTERVAL_MS,
  ) {
    this.key = readApiKeyFile(file);
    // Unref'd: a one-shot command exits without closing it.
    this.timer = setInterval(() => this.reload(), pollMs).unref();
  }

  close(): void {
    clearInterval(this.timer);
  }

  current(): string {
    return this.key;
  }

  /** Called with each new key; returns the unsubscribe. */
  onChange(fn: (key: string) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private reload(): void {
    this.rereads++;
    let next: string;
    try {
      next = readApiKeyFile(this.file);
    } catch (err) {
      this.log?.warn(
        { file: this.file, reason: (err as Error).message },
        'Temporal API key file unreadable; keeping the key in use',
      );
      return;
    }
    if (next === this.key) return;
    this.key = next;
    this.log?.info(
      { file: this.file },
      'Temporal API key file changed; the new key is used from the next call',
    );
    for (const fn of this.listeners) fn(next);
  }
}

const watched = new Map<string, ApiKeyFile>();

/** One watcher per file per process, shared by its connections. */
export function apiKeyFile(file: string, log?: Logger): ApiKeyFile {
  let source = watched.get(file);
  if (!source) {
    source = new ApiKeyFile(file, log);
    watched.set(file, source);
  }
  return source;
}
