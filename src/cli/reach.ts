import net from 'node:net';

/** `promise`, or `onTimeout()` thrown after `ms`; the promise's own later failure is then ignored. */
export async function within<T>(promise: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  promise.catch(() => undefined);
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Whether a TCP connection to host:port opens within `ms`: undefined if it does, else the reason (the socket's
 * error code: ECONNREFUSED, ENOTFOUND, …, or a timeout). The gRPC client retries a refused connection for
 * seconds and reports it only as UNAVAILABLE; this names it at once.
 */
export function tcpProblem(address: string, ms: number): Promise<string | undefined> {
  const i = address.lastIndexOf(':');
  const host = address.slice(0, i).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(i + 1));
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (problem: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(problem);
    };
    const timer = setTimeout(() => done(`no connection within ${ms} ms`), ms);
    socket.once('connect', () => done(undefined));
    socket.once('error', (err: NodeJS.ErrnoException) => done(`connect ${err.code ?? err.message}`));
  });
}
