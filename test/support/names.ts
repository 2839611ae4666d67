import crypto from 'node:crypto';

/** Fresh names per test so runs never see each other's topics, groups, queues or keys. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${crypto.randomUUID()}`;
}

/** A tenant name that satisfies contract §2's pattern. */
export function uniqueTenant(): string {
  return `t${crypto.randomUUID().replace(/-/g, '').slice(0, 20)}`;
}
