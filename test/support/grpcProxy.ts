/**
 * A plaintext HTTP/2 (h2c) proxy in front of the Temporal dev server that records, per gRPC call, the method and
 * the metadata a test asks about. The dev server accepts any API key, so what it receives cannot be asked of it;
 * the proxy sees each call's `authorization` header on the wire, as a server that checks keys would. Streams are
 * forwarded unchanged in both directions, response trailers included (gRPC's status travels in them).
 */
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';

export interface SeenCall {
  /** `/temporal.api.workflowservice.v1.WorkflowService/StartWorkflowExecution` → `StartWorkflowExecution`. */
  method: string;
  headers: http2.IncomingHttpHeaders;
}

export interface GrpcProxy {
  address: string;
  calls: SeenCall[];
  close(): Promise<void>;
}

const { NGHTTP2_FLAG_END_STREAM, NGHTTP2_CANCEL, NGHTTP2_NO_ERROR } = http2.constants;
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'http2-settings']);

function forwardable(headers: http2.IncomingHttpHeaders, keep: string[]): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) {
    if ((k.startsWith(':') && !keep.includes(k)) || HOP_BY_HOP.has(k) || v === undefined) continue;
    out[k] = v;
  }
  return out;
}

/**
 * `refuse` answers the named methods (`*`: every one) itself with that gRPC status (7 PERMISSION_DENIED, 16 UNAUTHENTICATED), as a
 * server checking each call's permissions does (Temporal Cloud's per-namespace API keys); the rest goes through.
 * It is read at each call, so a test may change it while the proxy runs (a server that starts refusing).
 */
export async function startGrpcProxy(
  upstream: string,
  refuse: Record<string, number> = {},
  /**
   * Holds each call of the named methods this long before passing it on, as a server slow to take them does; read
   * at each call like `refuse`. A call its client cancels meanwhile is never passed on.
   */
  delayMs: Record<string, number> = {},
): Promise<GrpcProxy> {
  const calls: SeenCall[] = [];
  const session = http2.connect(`http://${upstream}`);
  session.on('error', () => undefined);
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  /** Calls held back by `delayMs`, let go of at close. */
  const held = new Set<NodeJS.Timeout>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  server.on('stream', (down, headers) => {
    const method = String(headers[':path']).split('/').pop() ?? '';
    calls.push({ method, headers });
    const refusal = refuse[method] ?? refuse['*'];
    if (refusal !== undefined) {
      // A trailers-only answer: the status in the headers, no message.
      down.on('error', () => undefined);
      down.respond(
        {
          ':status': 200,
          'content-type': 'application/grpc',
          'grpc-status': String(refusal),
          'grpc-message': encodeURIComponent(`Request unauthorized (${method} refused by the test)`),
        },
        { endStream: true },
      );
      return;
    }
    const delay = delayMs[method] ?? 0;
    if (delay > 0) {
      down.on('error', () => undefined);
      down.pause();
      const timer = setTimeout(() => {
        held.delete(timer);
        if (!down.closed) forward(down, headers);
      }, delay);
      held.add(timer);
      return;
    }
    forward(down, headers);
  });
  function forward(down: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
    const up = session.request(forwardable(headers, [':method', ':path']));
    let trailers: http2.IncomingHttpHeaders = {};
    up.on('trailers', (t) => (trailers = t));
    up.on('response', (h, flags) => {
      if (down.destroyed) return;
      // A trailers-only answer (an error status at once) ends with its headers.
      if ((flags ?? 0) & NGHTTP2_FLAG_END_STREAM) {
        down.respond(forwardable(h, [':status']), { endStream: true });
        return;
      }
      down.respond(forwardable(h, [':status']), { waitForTrailers: true });
      down.on('wantTrailers', () => down.sendTrailers(forwardable(trailers, [])));
      up.pipe(down);
    });
    down.pipe(up);
    // Either side resetting its stream (a cancelled long poll, a server going away) resets the other; a stream
    // that ended normally closes with NO_ERROR, and the other side finishes what is still queued.
    down.on('close', () => {
      if (down.rstCode !== NGHTTP2_NO_ERROR && !up.closed) up.close(NGHTTP2_CANCEL);
    });
    up.on('close', () => {
      if (up.rstCode !== NGHTTP2_NO_ERROR && !down.closed) down.close(up.rstCode ?? NGHTTP2_CANCEL);
    });
    up.on('error', () => undefined);
    down.on('error', () => undefined);
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    calls,
    async close() {
      for (const timer of held) clearTimeout(timer);
      held.clear();
      session.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Open client sessions (the relay's long polls) would hold close() otherwise.
        for (const s of sessions) s.destroy();
      });
    },
  };
}

/**
 * A TLS front (ALPN h2) passing the decrypted bytes to a plaintext HTTP/2 server, as a TLS-terminating load
 * balancer does: the relay's TLS settings meet a real handshake with the certificate the test chose.
 */
export async function startTlsFront(
  upstream: string,
  cert: Buffer,
  key: Buffer,
): Promise<{ address: string; close(): Promise<void> }> {
  const [host, port] = [upstream.slice(0, upstream.lastIndexOf(':')), Number(upstream.split(':').pop())];
  const sockets = new Set<net.Socket>();
  const server = tls.createServer({ cert, key, ALPNProtocols: ['h2'] }, (secure) => {
    const plain = net.connect(port, host);
    for (const s of [secure, plain]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    secure.pipe(plain).pipe(secure);
  });
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}
