import { execFileSync } from 'node:child_process';

/** A throwaway self-signed P-256 certificate and key (as good as RSA for these checks, and far cheaper to make). */
export function makeSelfSigned(certPath: string, keyPath: string, commonName: string): void {
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'].concat([
      '-keyout',
      keyPath,
      '-out',
      certPath,
      '-subj',
      `/CN=${commonName}`,
      '-days',
      '1',
    ]),
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
}
