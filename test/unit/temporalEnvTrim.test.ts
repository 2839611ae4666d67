/**
 * The relay checks TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE and TEMPORAL_TLS through their rows (trimmed), and the
 * SDK's loader reads them again: it must read the same values, or a value with a stray space passes the relay's
 * check and means something else to the SDK (the file silently not read and the default address used, the
 * profile refused under another variable's name, TLS off).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Env, loadRelayConfig } from '../../src/config';
import { ConfigError } from '../../src/errors';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h-review-temporal-trim-'));
const toml = path.join(dir, 'temporal.toml');
beforeAll(() =>
  fs.writeFileSync(
    toml,
    '[profile.default]\naddress = "127.0.0.1:7299"\n[profile.prod]\naddress = "127.0.0.1:7234"\n',
  ),
);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function outcome(env: Env): string {
  try {
    return `address ${loadRelayConfig('worker', env).temporal.address}`;
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return `refused: ${(err as ConfigError).variable}`;
  }
}

test('TEMPORAL_PROFILE with a stray space: the profile is used, or TEMPORAL_PROFILE is named', () => {
  expect(outcome({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: ' prod' })).toMatch(
    /^(address 127\.0\.0\.1:7234|refused: TEMPORAL_PROFILE)$/,
  );
});

test('TEMPORAL_CONFIG_FILE with a stray space: the file is read, or TEMPORAL_CONFIG_FILE is refused', () => {
  expect(outcome({ TEMPORAL_CONFIG_FILE: ` ${toml}` })).toMatch(
    /^(address 127\.0\.0\.1:7299|refused: TEMPORAL_CONFIG_FILE)$/,
  );
});

test('TEMPORAL_TLS with a stray space means what it says to the SDK too', () => {
  const cfg = (v: string) => loadRelayConfig('worker', { TEMPORAL_TLS: v }).temporal;
  expect(cfg(' true')).toEqual(cfg('true'));
  expect(cfg('false ')).toEqual(cfg('false'));
  expect(cfg('true')).not.toEqual(cfg('false'));
});
