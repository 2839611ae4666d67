/** TLS material named by the environment: a PEM file must be readable and load now, so a bad one stops the start
 * with one line instead of failing every handshake later. */
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import { createSecureContext } from 'node:tls';
import { z } from 'zod';
import { ConfigError } from '../errors';
import type { ParsedVar } from './envVar';
import { type Env, nonEmpty, read } from './schema';

/** The code of a failed OpenSSL load (ERR_OSSL_*), for the one-line message: codes are stable, texts are not. */
export function sslCode(err: unknown): string {
  const code = err && typeof err === 'object' ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : 'no error code';
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/**
 * A CA bundle: one or more PEM certificates. Node's `ca` option (tls.createSecureContext) silently skips what
 * it cannot parse, so each block is parsed here; a bundle with nothing usable would otherwise trust no server.
 */
export function caProblem(content: Buffer): string | undefined {
  const blocks = content.toString('latin1').match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) {
    try {
      new X509Certificate(content);
      return 'holds a DER certificate, not PEM';
    } catch (err) {
      return `holds no PEM certificate (${sslCode(err)})`;
    }
  }
  for (const [i, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch (err) {
      return `certificate ${i + 1} of ${blocks.length} does not load (${sslCode(err)})`;
    }
  }
  return undefined;
}

export function certProblem(content: Buffer): string | undefined {
  try {
    createSecureContext({ cert: content });
    return undefined;
  } catch (err) {
    return `does not load as a PEM certificate (${sslCode(err)})`;
  }
}

export function keyProblem(content: Buffer): string | undefined {
  try {
    createSecureContext({ key: content });
    return undefined;
  } catch (err) {
    // An encrypted key fails here too (ERR_OSSL_BAD_DECRYPT): there is no passphrase variable to open it with.
    return `does not load as an unencrypted PEM private key (${sslCode(err)})`;
  }
}

/**
 * A PEM file the process can read now and whose content loads, so a missing or garbled certificate stops the
 * start with one line. Found later it would not: Temporal's TLS check would die with a stack trace, kafkajs
 * would retry "cannot list topics" forever, and every runs API call would fail until retries ran out.
 */
const pemFile = (problem: (content: Buffer) => string | undefined) =>
  nonEmpty.transform((p, ctx) => {
    let content: Buffer;
    try {
      if (!fs.statSync(p).isFile()) throw new Error('not a regular file');
      content = fs.readFileSync(p);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'is not a readable file' });
      return z.NEVER;
    }
    const reason = problem(content);
    if (reason !== undefined) {
      ctx.addIssue({ code: 'custom', message: reason });
      return z.NEVER;
    }
    return p;
  });
export const caFile = pemFile(caProblem);
export const certFile = pemFile(certProblem);
export const keyFile = pemFile(keyProblem);

/**
 * A client certificate and its key (mTLS), read through their rows (their schemas: certFile, keyFile): each must
 * load, both or neither be set, and the two be one pair, or every handshake would fail later. The paths, or
 * undefined when neither is set.
 */
export function readClientPair(
  env: Env,
  certRow: ParsedVar<string>,
  keyRow: ParsedVar<string>,
): { certPath: string; keyPath: string } | undefined {
  const [certVar, keyVar] = [certRow.name, keyRow.name];
  const certPath = read(env, certVar, certRow.schema);
  const keyPath = read(env, keyVar, keyRow.schema);
  if (!certPath && !keyPath) return undefined;
  if (!certPath) throw new ConfigError(certVar, `must be set together with ${keyVar}`);
  if (!keyPath) throw new ConfigError(keyVar, `must be set together with ${certVar}`);
  try {
    createSecureContext({ cert: fs.readFileSync(certPath), key: fs.readFileSync(keyPath) });
  } catch (err) {
    throw new ConfigError(
      keyVar,
      `= ${JSON.stringify(keyPath)}: does not match ${certVar} (${sslCode(err)})`,
    );
  }
  return { certPath, keyPath };
}
