/**
 * One request of the OAUTHBEARER token provider (./oauthBearer.ts) to its token endpoint: the form POSTed, and the
 * answer read (status, Retry-After, at most 64 KiB of body), or why none came (no answer in time, the provider
 * closing, a network failure by its socket code). The provider decides what an answer means.
 */
import { request } from 'undici';
import { networkCode } from './oauthAnswer';

/** A token endpoint's answer is a small JSON object; more than this is not read. */
const MAX_ANSWER_BYTES = 64 * 1024;

export interface TokenAnswer {
  status: number;
  retryAfter: string | undefined;
  body: string;
}

export type NoAnswer = { failed: 'timeout' } | { failed: 'closing' } | { failed: 'network'; code: string };

export async function postTokenRequest(
  url: string,
  req: { headers: Record<string, string>; form: string },
  limits: { timeoutMs: number; closing: AbortSignal },
): Promise<TokenAnswer | NoAnswer> {
  // A timer, not AbortSignal.timeout: a timeout signal held only by AbortSignal.any can be garbage-collected before
  // it fires (nodejs/node#57736), and the request would wait for undici's own timeouts instead.
  const call = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    call.abort();
  }, limits.timeoutMs);
  const onClosing = () => call.abort();
  limits.closing.addEventListener('abort', onClosing, { once: true });
  try {
    if (limits.closing.aborted) return { failed: 'closing' };
    const res = await request(url, {
      method: 'POST',
      headers: req.headers,
      body: req.form,
      signal: call.signal,
    });
    const retryAfter = res.headers['retry-after'];
    return {
      status: res.statusCode,
      retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
      body: await readBounded(res.body),
    };
  } catch (err) {
    if (limits.closing.aborted) return { failed: 'closing' };
    if (timedOut) return { failed: 'timeout' };
    return { failed: 'network', code: networkCode(err) };
  } finally {
    clearTimeout(timer);
    limits.closing.removeEventListener('abort', onClosing);
  }
}

async function readBounded(stream: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES) {
      stream.destroy();
      break;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
