/**
 * The relay's log lines: JSON for collectors, pino-pretty for a person at a terminal (LOG_FORMAT overrides the
 * choice), level names as strings, secrets redacted in both formats, and the fields a per-record line carries.
 */
import { Writable } from 'node:stream';
import { loadRelayConfig } from '../../src/config';
import { ConfigError } from '../../src/errors';
import { createLogger, recordFields, resolveLogFormat } from '../../src/logger';

function sink() {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, text: () => text };
}

describe('log format', () => {
  test('LOG_FORMAT decides; unset, a terminal gets pretty lines and anything else JSON', () => {
    expect(resolveLogFormat(undefined, true)).toBe('pretty');
    expect(resolveLogFormat(undefined, false)).toBe('json');
    expect(resolveLogFormat('json', true)).toBe('json');
    expect(resolveLogFormat('pretty', false)).toBe('pretty');
  });

  test('LOG_FORMAT is json or pretty; anything else stops start-up with one line naming it', () => {
    expect(loadRelayConfig('worker', {}).logFormat).toBeUndefined();
    expect(loadRelayConfig('worker', { LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(loadRelayConfig('worker', { LOG_FORMAT: 'json' }).logFormat).toBe('json');
    let caught: unknown;
    try {
      loadRelayConfig('worker', { LOG_FORMAT: 'xml' });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as Error).message).toBe(
      'invalid configuration: LOG_FORMAT = "xml": must be json or pretty',
    );
  });

  test('JSON lines name their level as a string and redact secrets', () => {
    const out = sink();
    const log = createLogger('unit', 'debug', { format: 'json', destination: out.stream });
    log.debug({ tenant: 'acme', token: 'tok-123', headers: { authorization: 'Bearer tok-123' } }, 'hello');
    log.warn({ cfg: { apiKey: 'key-456', password: 'pw-789' } }, 'careful');
    const lines = out
      .text()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['debug', 'hello'],
      ['warn', 'careful'],
    ]);
    expect(lines[0]).toMatchObject({ name: 'unit', tenant: 'acme', token: '<redacted>' });
    expect(lines[1]).toMatchObject({ cfg: { apiKey: '<redacted>', password: '<redacted>' } });
    expect(out.text()).not.toMatch(/tok-123|key-456|pw-789/);
  });

  test('pretty lines are for reading, not parsing, and redact secrets too', () => {
    const out = sink();
    const log = createLogger('unit', 'info', { format: 'pretty', destination: out.stream });
    log.info({ tenant: 'acme', token: 'tok-123' }, 'record started its workflow');
    log.debug('below the level');
    const text = out.text();
    expect(text).toMatch(/INFO \(unit\/\d+\): record started its workflow/);
    expect(text).toContain('tenant: "acme"');
    expect(text).toContain('token: "<redacted>"');
    expect(text).not.toContain('tok-123');
    expect(text).not.toContain('below the level');
    expect(() => JSON.parse(text.split('\n')[0]!)).toThrow();
  });
});

describe('per-record fields', () => {
  test('name the tenant, dispatch, workflow, Temporal run and trace when known, and leave out the unknown', () => {
    expect(
      recordFields({
        tenant: 'acme',
        dispatchKey: 'd-1',
        workflowId: 'dispatch:acme:d-1',
        temporalRunId: 'r-1',
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      }),
    ).toEqual({
      tenant: 'acme',
      dispatch_key: 'd-1',
      workflow_id: 'dispatch:acme:d-1',
      temporal_run_id: 'r-1',
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    });
    expect(recordFields({ tenant: 'acme', dispatchKey: null })).toEqual({ tenant: 'acme' });
  });
});
