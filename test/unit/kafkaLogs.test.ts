/**
 * What kafkajs says during a broker outage reaches the relay's log at WARN, once per kind of message rather than
 * once per retry. The outage is real: a client of `createKafka` dials a port nothing listens on (kafkajs logs each
 * failed dial at ERROR, twice per retry: the connection's error and the broker pool's "trying another broker").
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import type { KafkaConfig } from '../../src/config';
import { freePort } from '../../devstack/ports';
import { createKafka } from '../../src/kafka/client';
import { RepeatThrottle, repeatKey } from '../../src/kafka/logThrottle';

function capture() {
  const lines: { level: number | string; msg: string; repeated?: number }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, logger: pino({ level: 'debug' }, stream) };
}

const levelOf = (l: number | string) => (typeof l === 'number' ? pino.levels.labels[l] : l);

describe('kafkajs logs during a broker outage', () => {
  it('come out at WARN, each kind of message once while it repeats', async () => {
    const port = await freePort();
    const cfg: KafkaConfig = {
      brokers: [`127.0.0.1:${port}`],
      clientId: 'unit-outage',
      groupId: 'unit-outage',
      ssl: false,
    };
    const { lines, logger } = capture();
    const retries = 5;
    const admin = createKafka(cfg, logger, {
      connectionTimeout: 500,
      retry: { retries, initialRetryTime: 20, maxRetryTime: 50, factor: 0 },
    }).admin();
    await expect(admin.connect()).rejects.toThrow(/ECONNREFUSED|Connection error/);
    await admin.disconnect().catch(() => undefined);

    const kafkajsLines = lines.filter((l) => /ECONNREFUSED|broker/i.test(l.msg));
    // The outage is visible, at WARN …
    expect(kafkajsLines.length).toBeGreaterThan(0);
    expect(kafkajsLines.map((l) => levelOf(l.level))).toEqual(kafkajsLines.map(() => 'warn'));
    expect(lines.filter((l) => levelOf(l.level) === 'error')).toEqual([]);
    // … and the (retries + 1) dials do not each add their two lines: one line per distinct message.
    const distinct = new Set(kafkajsLines.map((l) => l.msg));
    expect(kafkajsLines).toHaveLength(distinct.size);
    expect(distinct.size).toBeLessThan(retries);
  });
});

describe('RepeatThrottle', () => {
  it('shows a message once per window and then says how many like it were left out', () => {
    let now = 0;
    const t = new RepeatThrottle(60_000, () => now);
    const key = repeatKey('BrokerPool', 'Failed to connect to 127.0.0.1:19092, retry 3 in 300ms');
    expect(t.admit(key)).toBe(0);
    now = 1_000;
    expect(t.admit(repeatKey('BrokerPool', 'Failed to connect to 127.0.0.1:19092, retry 4 in 600ms'))).toBe(
      undefined,
    );
    expect(t.admit(key)).toBe(undefined);
    // Another message is not held back by the first.
    expect(t.admit(repeatKey('Connection', 'Connection error: connect ECONNREFUSED'))).toBe(0);
    now = 60_000;
    expect(t.admit(key)).toBe(2);
    expect(t.admit(key)).toBe(undefined);
  });

  it('remembers a bounded number of messages, forgetting stale ones first', () => {
    let now = 0;
    const t = new RepeatThrottle(1_000, () => now, 2);
    expect(t.admit('a')).toBe(0);
    now = 2_000;
    expect(t.admit('b')).toBe(0);
    expect(t.admit('c')).toBe(0); // 'a' was stale and is forgotten, 'b' is kept
    expect(t.admit('b')).toBe(undefined);
    expect(t.admit('d')).toBe(0); // all recent: the oldest goes
    expect(t.admit('c')).toBe(undefined);
  });
});
