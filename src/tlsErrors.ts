/**
 * TLS failures told apart by error code (never by message text): the ones that mean "these credentials or this
 * trust do not fit that server", which no amount of waiting cures, as opposed to a server that is down.
 */

/** Node's codes for a peer certificate that fails verification (OpenSSL's X509_V_ERR_* names). */
const CERT_VERIFY_CODES = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'CERT_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_CHAIN_TOO_LONG',
  'CERT_REVOKED',
  'INVALID_CA',
  'PATH_LENGTH_EXCEEDED',
  'INVALID_PURPOSE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

export type TlsRefusal = 'untrusted-server' | 'refused-by-server' | 'handshake';

/**
 * What a TLS error code says: our trust (CA) rejects the server's certificate, the server rejects us (an
 * alert: no, unknown or bad client certificate), another handshake failure (e.g. the server does not speak
 * TLS), or undefined when the code is not a TLS one (network errors, timeouts).
 */
export function tlsRefusal(code: unknown): TlsRefusal | undefined {
  if (typeof code !== 'string') return undefined;
  if (CERT_VERIFY_CODES.has(code)) return 'untrusted-server';
  if (/^ERR_SSL_.*ALERT/.test(code)) return 'refused-by-server';
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')) return 'handshake';
  return undefined;
}
