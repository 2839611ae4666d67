import { kafkaClusterId } from '../../devstack/stack/services';

describe('the KRaft cluster id the stack formats a broker with', () => {
  it('never starts with "-": StorageTool would read `-t -…` as a missing value and refuse to format', () => {
    // 0xF8 as the first byte makes the base64url text start with "-" (1 format in 64 failed in CI so).
    const draws = [Buffer.alloc(16, 0xf8), Buffer.alloc(16, 0x11)];
    const id = kafkaClusterId((n) => draws.shift()!.subarray(0, n));
    expect(id).toBe(Buffer.alloc(16, 0x11).toString('base64url'));
    expect(draws).toEqual([]);
  });

  it('is 16 random bytes as 22 base64url characters', () => {
    expect(kafkaClusterId()).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
  });
});
