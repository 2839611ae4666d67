/**
 * A first build of the temporal CLI or tctl runs `go` for minutes; silence that long looks like a hang. The
 * watcher counts what the build tool prints (with `-v`, go names each package it compiles; `go: downloading`
 * each module; Maven `Downloaded from` each artifact) and says every few seconds how long it has been running
 * and how far it got.
 */
import type { Progress } from './progress';

export interface BuildWatch {
  /** One line of the build tool's output. */
  line(text: string): void;
  /** Stops the ticker; returns the closing summary, e.g. "3m 05s, 412 packages built" (the same on every call). */
  stop(): string;
}

export interface WatchOptions {
  intervalMs?: number;
  now?: () => number;
  /** Calls `tick` every `ms` until the returned function is called. */
  every?: (ms: number, tick: () => void) => () => void;
}

export const BUILD_REPORT_INTERVAL_MS = 10_000;

/** A Go import path on a line of its own, as `go build -v` prints it ("net/http", "go.temporal.io/api/enums/v1"). */
const GO_PACKAGE = /^[A-Za-z0-9_.~+-]+(?:\/[A-Za-z0-9_.~+-]+)*$/;
const GO_DOWNLOAD = /^go: downloading (\S+)/;
const MAVEN_DOWNLOAD = /Downloaded from \S+: (\S+)/;

function defaultEvery(ms: number, tick: () => void): () => void {
  const timer = setInterval(tick, ms);
  // A forgotten watcher must not keep the process alive.
  timer.unref();
  return () => clearInterval(timer);
}

const plural = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;

export function formatElapsed(ms: number): string {
  const s = Math.floor(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
}

export function watchBuild(what: string, progress: Progress, options: WatchOptions = {}): BuildWatch {
  const now = options.now ?? Date.now;
  const started = now();
  let modules = 0;
  let packages = 0;
  let artifacts = 0;
  let last: string | undefined;
  let summary: string | undefined;

  const counts = (): string => {
    const parts = [
      modules > 0 ? `${plural(modules, 'module')} downloaded` : '',
      artifacts > 0 ? `${plural(artifacts, 'artifact')} downloaded` : '',
      packages > 0 ? `${plural(packages, 'package')} built` : '',
    ].filter(Boolean);
    return parts.join(', ');
  };
  const cancel = (options.every ?? defaultEvery)(options.intervalMs ?? BUILD_REPORT_INTERVAL_MS, () =>
    progress(
      `${what}: ${formatElapsed(now() - started)}, ${counts() || 'nothing downloaded or compiled yet'}${last ? ` (last: ${last})` : ''}`,
    ),
  );

  return {
    line(text) {
      const t = text.trim();
      const download = GO_DOWNLOAD.exec(t);
      const artifact = MAVEN_DOWNLOAD.exec(t);
      if (download) {
        modules += 1;
        last = download[1];
      } else if (artifact) {
        artifacts += 1;
        last = artifact[1]?.split('/').pop();
      } else if (GO_PACKAGE.test(t)) {
        packages += 1;
        last = t;
      }
    },
    stop() {
      if (summary === undefined) {
        cancel();
        // Nothing counted: everything came from Go's or Maven's own caches.
        summary = `${formatElapsed(now() - started)}, ${counts() || 'nothing downloaded or compiled'}`;
      }
      return summary;
    },
  };
}
