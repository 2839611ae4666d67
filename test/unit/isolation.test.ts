/**
 * Tenant isolation and secrets, the pure parts: workflow ids cannot collide across tenants, a tenant name cannot
 * widen a topic pattern, and the API token is taken out of any text an echoing API sends back.
 */
import fc from 'fast-check';
import { readRedacted } from '../../src/activities/runsApiCall';
import { redactedHead, secretRedactor } from '../../src/redact';
import { bodyExcerpt } from '../../src/activities/classify';
import {
  DEFAULT_DISPATCH_TOPIC_PATTERN,
  isValidTenant,
  tenantFromTopic,
  topics,
  workflowId,
} from '../../src/contract';
import { ConfigError } from '../../src/errors';
import { validateTenants } from '../../src/ops/topics';

const KEY = /^[A-Za-z0-9._:@/-]{1,256}$/;
const tenantArb = fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,62}$/);
const keyArb = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9._:@/-]{1,40}$/),
  // Keys built from tenant-looking parts and separators: the adversarial shapes.
  fc
    .array(fc.oneof(tenantArb, fc.constantFrom(':', '::', '../', 'dispatch:', '-', '.')), {
      minLength: 1,
      maxLength: 6,
    })
    .map((parts) => parts.join('').slice(0, 256))
    .filter((k) => KEY.test(k)),
);

/** Every way to read a workflow id back as dispatch:<tenant>:<key> with a valid tenant and key. */
function readings(id: string): [string, string][] {
  const out: [string, string][] = [];
  if (!id.startsWith('dispatch:')) return out;
  const rest = id.slice('dispatch:'.length);
  for (let i = rest.indexOf(':'); i >= 0; i = rest.indexOf(':', i + 1)) {
    const [tenant, key] = [rest.slice(0, i), rest.slice(i + 1)];
    if (isValidTenant(tenant) && KEY.test(key)) out.push([tenant, key]);
  }
  return out;
}

describe('workflow ids cannot collide across tenants', () => {
  it('dispatch:<tenant>:<dispatch_key> has exactly one reading for any valid tenant and key (property)', () => {
    fc.assert(
      fc.property(tenantArb, keyArb, (tenant, key) => {
        expect(readings(workflowId(tenant, key))).toEqual([[tenant, key]]);
      }),
      { numRuns: 5000 },
    );
  });

  it('distinct (tenant, key) pairs give distinct ids (property)', () => {
    fc.assert(
      fc.property(tenantArb, keyArb, tenantArb, keyArb, (t1, k1, t2, k2) => {
        if (t1 !== t2 || k1 !== k2) expect(workflowId(t1, k1)).not.toBe(workflowId(t2, k2));
      }),
      { numRuns: 5000 },
    );
  });

  it.each([
    ['acme', 'x:y', 'acme-x', 'y'],
    ['acme', 'acme:d-1', 'acme', 'd-1'],
    ['acme', '-x:d-1', 'acme-x', 'd-1'],
    ['acme', 'x:d-1', 'acme-x', 'd-1'],
    ['acme', '../acme-x/d-1', 'acme-x', 'd-1'],
    ['a', 'b:c', 'a-b', 'c'],
    ['acme', 'dispatch:other:d-1', 'other', 'd-1'],
  ])('tenant %p key %p and tenant %p key %p get different ids', (t1, k1, t2, k2) => {
    expect(workflowId(t1, k1)).not.toBe(workflowId(t2, k2));
    expect(readings(workflowId(t1, k1))).toEqual([[t1, k1]]);
  });

  it('no valid tenant contains the separator', () => {
    fc.assert(fc.property(fc.string(), (s) => !(isValidTenant(s) && s.includes(':'))));
  });
});

describe('a tenant name cannot widen a topic pattern', () => {
  const widening = [
    '.*',
    'a.b',
    'acme.dispatch',
    'Acme',
    'ACME',
    'a'.repeat(64),
    '',
    '-acme',
    '_acme',
    'acme:x',
    'acme/x',
    'ac me',
    'acme\n',
    '(acme|other)',
    'acmé',
  ];

  it.each(widening.map((t) => [JSON.stringify(t), t]))('%s is not a tenant', (_shown, tenant) => {
    expect(isValidTenant(tenant)).toBe(false);
    expect(() => validateTenants([tenant])).toThrow(ConfigError);
    expect(() => validateTenants(['acme', tenant])).toThrow(
      `invalid configuration: --tenant ${JSON.stringify(tenant)} must match ^[a-z0-9][a-z0-9_-]{0,62}$`,
    );
  });

  it('the error is one line', () => {
    for (const tenant of widening) {
      try {
        validateTenants([tenant]);
      } catch (err) {
        expect((err as Error).message.split('\n')).toHaveLength(1);
      }
    }
  });

  it('a valid tenant’s topics hold only that tenant: the topic reads back as it, and nothing else does (property)', () => {
    const pattern = new RegExp(DEFAULT_DISPATCH_TOPIC_PATTERN);
    fc.assert(
      fc.property(tenantArb, (tenant) => {
        expect(pattern.test(topics.dispatch(tenant))).toBe(true);
        expect(tenantFromTopic(topics.dispatch(tenant))).toBe(tenant);
        expect(tenantFromTopic(topics.dlq(tenant))).toBeUndefined();
      }),
    );
    fc.assert(
      fc.property(fc.string(), (topic) => {
        const tenant = tenantFromTopic(topic);
        return tenant === undefined || topics.dispatch(tenant) === topic;
      }),
    );
  });
});

describe('the API token is redacted from what the API sends back', () => {
  const tokenArb = fc.string({ minLength: 8, maxLength: 64 }).filter((t) => t.trim().length >= 8);

  it('in any form an echo may write it: verbatim, JSON-escaped, \\/-escaped, URL-encoded (property)', () => {
    fc.assert(
      fc.property(tokenArb, fc.string(), fc.string(), (token, before, after) => {
        const redact = secretRedactor(token);
        for (const form of [
          token,
          JSON.stringify(token).slice(1, -1),
          JSON.stringify(token).slice(1, -1).replace(/\//g, '\\/'),
          encodeURIComponent(token),
        ]) {
          // The form as written must be gone (the verbatim token alone is absent from an escaped form
          // even without any redaction), and a marker must stand where it was.
          const out = redact(`${before}${form}${after}`);
          expect(out).not.toContain(form);
          expect(out).toContain('<redacted>');
        }
      }),
    );
  });

  it('before the body is cut to an excerpt, so no piece of the token survives a cut through it', () => {
    const token = 'tok-Zq81xWv3Lm0Pb7Rt5Ys2Nc4Ud6Ke9Hj';
    const redact = secretRedactor(token);
    for (let pad = 150; pad < 230; pad++) {
      const body = `${'x'.repeat(pad)} {"echo":"${token}"}`;
      const excerpt = bodyExcerpt(redact(body));
      for (let i = 0; i + 8 <= token.length; i++) expect(excerpt).not.toContain(token.slice(i, i + 8));
    }
  });

  describe('when the 64 KiB read limit cuts through a token', () => {
    const token = 'tok-Zq81/xWv3Lm0Pb7Rt5Ys2Nc4Ud6Ke9Hj';
    const forms = [
      token,
      JSON.stringify(token).slice(1, -1).replace(/\//g, '\\/'),
      encodeURIComponent(token),
    ];
    const LIMIT = 64 * 1024;
    async function* chunked(body: Buffer, size = 16 * 1024) {
      for (let i = 0; i < body.length; i += size) yield body.subarray(i, i + size);
    }

    it('no piece of it survives, not even once the excerpt collapses the whitespace before it', async () => {
      for (const form of forms) {
        // Every cut position through the form, from its first character on.
        for (let pad = LIMIT - form.length + 1; pad < LIMIT; pad++) {
          const body = Buffer.from(`${' '.repeat(pad)}${form} and more`);
          const text = await readRedacted(chunked(body), token);
          expect(text.length).toBeLessThanOrEqual(LIMIT);
          expect(bodyExcerpt(text)).toBe('');
        }
        // A form that ends right at the limit is whole, so it is redacted as usual.
        const whole = Buffer.from(`${' '.repeat(LIMIT - form.length)}${form} and more`);
        expect(bodyExcerpt(await readRedacted(chunked(whole), token))).toBe('<redacted>');
      }
    });

    it('nor when the read stops mid-character inside it', async () => {
      const wide = 'tök-Zq81xWv3Lm0Pb7Rt5Ys2Nc4Ud6Ke9Hj';
      // 14 bytes of padding, then "t" and the first byte of "ö": the read keeps one 16-byte chunk.
      const body = Buffer.from(`${'x'.repeat(14)}${wide} more`);
      expect(await readRedacted(chunked(body, 16), wide, 16)).toBe('x'.repeat(14));
    });

    it('an untruncated body keeps its end, and text that merely resembles a token is cut only at the limit', () => {
      expect(redactedHead('ends in tok-Z', 100, token, false)).toBe('ends in tok-Z');
      expect(redactedHead('abcdef', 4, token, false)).toBe('abcd');
      expect(redactedHead(`a ${token} b`, 100, undefined, true)).toBe(`a ${token} b`);
    });
  });

  it('without a token, text is unchanged', () => {
    expect(secretRedactor(undefined)('Bearer x')).toBe('Bearer x');
  });
});
