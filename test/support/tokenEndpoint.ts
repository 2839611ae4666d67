/**
 * A test token endpoint (./oauthServer.ts) for each test of a file: started before each test, closed after it,
 * with the relay client's credentials for it. The setup the OAuth token provider's unit tests share.
 */
import type { OAuthClientCredentials } from '../../src/config';
import { OAuthServer, type OAuthServerOptions } from './oauthServer';

export interface TokenEndpointPerTest {
  /** This test's endpoint. */
  readonly server: OAuthServer;
  /** The client's credentials at this test's endpoint (HTTP Basic unless `over` says otherwise). */
  credentials(over?: Partial<OAuthClientCredentials>): OAuthClientCredentials;
  /** Closes this test's endpoint and starts another with these options changed (a new address). */
  restart(change: Partial<OAuthServerOptions>): Promise<void>;
}

/** Registers the jest hooks; call at the top level of a test file. */
export function tokenEndpointPerTest(opts: OAuthServerOptions): TokenEndpointPerTest {
  let current: OAuthServer | undefined;
  beforeEach(async () => {
    current = await OAuthServer.start({ ...opts });
  });
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  const server = (): OAuthServer => {
    if (!current) throw new Error('the test token endpoint runs only during a test');
    return current;
  };
  return {
    get server() {
      return server();
    },
    credentials: (over = {}) => ({
      tokenEndpointUrl: server().tokenUrl,
      clientId: opts.clientId,
      clientSecret: opts.clientSecret,
      clientAuth: 'client_secret_basic',
      ...over,
    }),
    async restart(change) {
      await current?.close();
      current = await OAuthServer.start({ ...opts, ...change });
    },
  };
}
