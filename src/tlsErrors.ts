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

/**
 * TLS alerts (RFC 8446 §6.2) by which a server turns down the client certificate it was offered, or the lack of
 * one: fixing our certificate is the only cure. Other alerts say the two ends disagree on something else
 * (protocol version, ALPN, cipher suites), so blaming the client certificate would send an operator the wrong
 * way. decrypt_error is left out: it also reports a failed Finished check, not only a bad client signature (and
 * a key that does not match its certificate is refused at start, in config).
 */
const CLIENT_CERT_ALERTS = new Set([
  'CERTIFICATE_REQUIRED',
  'BAD_CERTIFICATE',
  'UNKNOWN_CA',
  'CERTIFICATE_UNKNOWN',
  'CERTIFICATE_EXPIRED',
  'CERTIFICATE_REVOKED',
  'UNSUPPORTED_CERTIFICATE',
  'ACCESS_DENIED',
]);

/**
 * Alerts that report a fault of the server's own, not a disagreement with us: waited out like an outage rather
 * than stopping the process.
 */
const TRANSIENT_ALERTS = new Set(['INTERNAL_ERROR']);

export type TlsRefusal = 'untrusted-server' | 'refused-by-server' | 'handshake';

/**
 * The alert in a Node/OpenSSL code for an alert received from the peer (ERR_SSL_<version>_ALERT_<name>, e.g.
 * ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL → NO_APPLICATION_PROTOCOL); undefined for any other code. The
 * OpenSSL of Node 24 says SSL/TLS where Node 20's said SSLV3 (ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE).
 */
export function tlsAlert(code: unknown): string | undefined {
  if (typeof code !== 'string') return undefined;
  return /^ERR_SSL_(?:SSLV3|TLSV1|TLSV13|SSL\/TLS)_ALERT_([A-Z0-9_]+)$/.exec(code)?.[1];
}

/**
 * What a TLS error code says: our trust (CA) rejects the server's certificate, the server rejects our client
 * certificate (or its absence), another handshake failure that waiting will not cure (the server does not speak
 * TLS, or refuses our protocol version or ALPN), or undefined when the code is not one of these: network
 * errors, timeouts, and a server's internal_error alert, which the callers wait out like an outage.
 */
export function tlsRefusal(code: unknown): TlsRefusal | undefined {
  if (typeof code !== 'string') return undefined;
  if (CERT_VERIFY_CODES.has(code)) return 'untrusted-server';
  const alert = tlsAlert(code);
  if (alert !== undefined) {
    if (TRANSIENT_ALERTS.has(alert)) return undefined;
    return CLIENT_CERT_ALERTS.has(alert) ? 'refused-by-server' : 'handshake';
  }
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')) return 'handshake';
  return undefined;
}

/**
 * A handshake failure that is not about certificates, as failure messages word it: an alert by its name, so the
 * operator sees at once what the server objected to (e.g. no_application_protocol: it does not offer ALPN h2).
 */
export function handshakeFailure(code: unknown): string {
  const alert = tlsAlert(code);
  return alert === undefined
    ? `TLS handshake failed (${String(code)})`
    : `TLS handshake refused with alert ${alert.toLowerCase()} (${String(code)})`;
}
