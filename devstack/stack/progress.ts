/** Provisioning takes minutes the first time: say what is happening and how long each step took. */
export type Progress = (message: string) => void;

export function consoleProgress(prefix = 'stack'): Progress {
  const started = Date.now();
  return (message) => {
    const s = ((Date.now() - started) / 1000).toFixed(1).padStart(6);
    process.stderr.write(`[${prefix} ${s}s] ${message}\n`);
  };
}

export const silentProgress: Progress = () => undefined;
