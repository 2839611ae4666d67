/**
 * Secret redaction, in one place: which configuration values and record headers are secrets, which log fields pino
 * censors, how a URL is shown (no userinfo, no secret query values), and how the runs API token is taken out of
 * text (answers, failure messages, dead letters) before anything quotes it.
 */

export const REDACTED = '<redacted>';

/** Environment variables whose values are never echoed, not even in a one-line config error. */
export function isSecretName(name: string): boolean {
  // KEY_DATA: a private key given inline (TEMPORAL_TLS_CLIENT_KEY_DATA).
  // OTLP_*HEADERS: an exporter's headers carry its credentials (OTEL_EXPORTER_OTLP_HEADERS).
  // A URL is an address, not a credential, even of a token endpoint (KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL).
  return !name.endsWith('_URL') && /PASSWORD|SECRET|TOKEN|API_KEY|KEY_DATA|OTLP_(TRACES_)?HEADERS/.test(name);
}

/**
 * The userinfo of a URL as a URL parser (WHATWG) reads it: after the scheme and its slashes, to the authority's
 * last `@`. http and the like take any number of slashes, backslashes too; other schemes have an authority only
 * after `//`.
 */
const USERINFO = /^((?:https?|wss?|ftp):[\\/]*)[^\\/?#]*@|^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/?#]*@/i;
/** Of text that is not a URL (a bad value being reported): to the last `@` before the query, across any `/`. */
const USERINFO_UNPARSED = /^([A-Za-z][A-Za-z0-9+.-]*:[\\/]*)[^?#]*@/;
/**
 * What is left after either: an `@` before the first `/` after `scheme://`, which a parser takes for a query or
 * fragment (`https://u:se#cret@host/`) but which was meant as a password holding a raw `?` or `#`.
 */
const USERINFO_RAW = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/]*@/;

/**
 * A URL without the user and password it may carry (`https://u:p@host` → `https://host`), also when the password
 * holds an unencoded `@`, and when the text does not parse as a URL at all (an invalid value quoted in an error).
 */
export function withoutUserinfo(url: string): string {
  // The scheme and slashes kept: whichever of USERINFO's two alternatives matched.
  return url
    .replace(URL.canParse(url) ? USERINFO : USERINFO_UNPARSED, (_m, a?: string, b?: string) => a ?? b ?? '')
    .replace(USERINFO_RAW, '$1');
}

/** A query or fragment parameter carrying a credential: by name as for headers, or a signature's or key's. */
function isCredentialParam(name: string): boolean {
  let decoded = name;
  try {
    decoded = decodeURIComponent(name);
  } catch {
    // Not percent-encoded validly: judged as written.
  }
  return isCredentialHeader(decoded) || /^(sig|signature|key|code|auth)$/i.test(decoded);
}

/**
 * A URL as any message shows it: without userinfo, and with the values of query and fragment parameters that
 * carry a credential (`client_secret`, `access_token`, `api_key`, `sig`) redacted. Text with no scheme-like
 * `name:` before an `@` and no such parameter (a port, a group id) is returned as it is.
 */
export function shownUrl(url: string): string {
  const bare = withoutUserinfo(url);
  const start = bare.search(/[?#]/);
  if (start < 0) return bare;
  const params = bare
    .slice(start)
    .replace(/([?#&;])([^=?#&;]+)=([^#&;]*)/g, (param, sep: string, name: string) =>
      isCredentialParam(name) ? `${sep}${name}=${REDACTED}` : param,
    );
  return bare.slice(0, start) + params;
}

/**
 * Kafka record headers that carry a credential, by name (any case): the HTTP ones (Authorization,
 * Proxy-Authorization, Cookie, Set-Cookie) and any whose name says token, password, secret, credential or API key
 * (X-Api-Key, X-Auth-Token). A dead letter never keeps them (contract §6).
 */
export function isCredentialHeader(name: string): boolean {
  return /^(proxy-)?authorization$|^(set-)?cookie$|token|passw(or)?d|secret|credential|api[-_]?key/i.test(
    name,
  );
}

/** Log fields pino censors: every place an Authorization value or a credential could sit. */
export const LOG_REDACT_PATHS = [
  'token',
  '*.token',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'password',
  '*.password',
  'apiKey',
  '*.apiKey',
];

/**
 * The token as sent and in the forms an echoing API may write it, longest first: a form inside another must
 * not be replaced first and break the longer one apart.
 */
function tokenForms(token: string): string[] {
  return [
    ...new Set([
      token,
      JSON.stringify(token).slice(1, -1),
      JSON.stringify(token).slice(1, -1).replace(/\//g, '\\/'),
      encodeURIComponent(token),
    ]),
  ].sort((a, b) => b.length - a.length);
}

/**
 * The one place the API token is taken out of text that reaches failure messages, logs and dead letters: the
 * token as sent and in the forms an echoing API may write it (JSON-escaped, `\/`-escaped, URL-encoded).
 * Applied to the API's answer as soon as it is read, before anything excerpts (and could cut through) it.
 */
export function secretRedactor(token: string | undefined): (text: string) => string {
  if (!token) return (text) => text;
  const forms = tokenForms(token);
  return (text) => forms.reduce((out, form) => out.split(form).join(REDACTED), text);
}

/**
 * The first `max` characters of a body, redacted. Whole forms of the token are redacted before the cut. A form
 * that the cut, or the end of what was read (`more`: the body goes on past `text`), goes through is not whole,
 * so no redaction can see it: its start, at the very end of the head, is dropped instead. Otherwise the first
 * characters of a token would survive, and an excerpt that collapses the whitespace before them would show
 * them.
 */
export function redactedHead(text: string, max: number, token: string | undefined, more: boolean): string {
  const redacted = secretRedactor(token)(text);
  if (redacted.length <= max && !more) return redacted;
  const head = redacted.slice(0, max);
  if (!token) return head;
  let keep = head.length;
  for (const form of tokenForms(token)) {
    // The longest proper prefix of this form that the head ends with (a whole form was redacted above).
    for (let k = Math.min(form.length - 1, head.length); k > 0; k--) {
      if (head.endsWith(form.slice(0, k))) {
        keep = Math.min(keep, head.length - k);
        break;
      }
    }
  }
  return head.slice(0, keep);
}

/** Any `Bearer <credential>` in text an answer echoed, whoever's credential it is. */
export function redactBearer(text: string): string {
  return text.replace(/\b(Bearer)\s+[^\s"',;]+/gi, `$1 ${REDACTED}`);
}
