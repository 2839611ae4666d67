/**
 * The token request's own timeout fires even when the garbage collector runs while the request waits. A timeout
 * signal held only by AbortSignal.any can be collected and never fire (nodejs/node#57736, see
 * src/activities/runsApiCall.ts and docs/design.md); the grant then waits on an endpoint that accepted the connection
 * but never answers until undici's own 300 s headers timeout. Node 20 collects it; Node 24 (what CI runs) does not,
 * so the second test pins the cause on every Node: the request's timeout is a timer, not such a signal.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import type { OAuthClientCredentials } from '../../src/config';
import { OAuthTokenError, OAuthTokenProvider } from '../../src/kafka/oauthBearer';
import { tokenEndpointPerTest } from '../support/tokenEndpoint';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

const endpoint = tokenEndpointPerTest({ clientId: 'relay', clientSecret: 's', lifetimeS: 100 });

test('a token request that gets no answer times out though the garbage collector runs meanwhile', async () => {
  endpoint.server.answerAfter = new Promise<void>(() => undefined); // accepted, never answered
  const creds: OAuthClientCredentials = endpoint.credentials();
  const p = new OAuthTokenProvider(creds, { timeoutMs: 200, sleep: async () => undefined });
  const collecting = setInterval(gc, 20);
  let cutOff: NodeJS.Timeout | undefined;
  try {
    const outcome = await Promise.race([
      p.token().then(
        () => 'granted',
        (e: unknown) => e,
      ),
      // Four attempts of 200 ms take about a second; a loaded machine collecting every 20 ms takes longer. Without the
      // fix the grant waits for undici's own 300 s headers timeout, so anything well short of that tells them apart.
      new Promise((r) => (cutOff = setTimeout(() => r('still waiting after 60 s'), 60_000))),
    ]);
    expect(outcome).toBeInstanceOf(OAuthTokenError);
    expect((outcome as Error).message).toMatch(/no answer within 200 ms/);
  } finally {
    clearInterval(collecting);
    clearTimeout(cutOff);
    (p as { close?: () => void }).close?.();
  }
}, 90_000);

test('the token request times out by its own timer, not by a signal AbortSignal.any could let the GC collect', async () => {
  endpoint.server.answerAfter = new Promise<void>(() => undefined);
  const timeout = jest.spyOn(AbortSignal, 'timeout');
  const any = jest.spyOn(AbortSignal, 'any');
  const p = new OAuthTokenProvider(endpoint.credentials(), { timeoutMs: 200, sleep: async () => undefined });
  try {
    await expect(p.token()).rejects.toThrow(/no answer within 200 ms/);
    expect({ timeout: timeout.mock.calls.length, any: any.mock.calls.length }).toEqual({
      timeout: 0,
      any: 0,
    });
  } finally {
    timeout.mockRestore();
    any.mockRestore();
    (p as { close?: () => void }).close?.();
  }
});
