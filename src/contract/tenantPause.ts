/**
 * A tenant's pause as the pause topic holds it (contract §2, "Pausing a tenant"): `tenant pause` and `tenant resume`
 * write it, keyed by the tenant; every ingester reads it. The latest record of a tenant is its state. Owned by the
 * contract because operators and other tools may read and write the topic too.
 */
import { isValidTenant } from './names';

export interface TenantPause {
  tenant: string;
  paused: boolean;
  /** Why, as the operator said it (`--reason`); null when not given. */
  reason: string | null;
  /** When it was written, ISO 8601. */
  at: string;
  /** Who wrote it (user@host of the command), null when unknown. */
  by: string | null;
}

/** The record's value: the pause as JSON, its tenant included (the key is the tenant too). */
export function encodeTenantPause(pause: TenantPause): string {
  return JSON.stringify(pause);
}

/** A tombstone keyed by a tenant: its pause is deleted, and the tenant is not paused (as after compaction). */
export interface TenantPauseDeleted {
  tenant: string;
  deleted: true;
}

/**
 * The pause a record holds, its deletion (a tombstone keyed by a tenant), or a reason why it holds neither (not JSON,
 * another shape, a key that is not its tenant): such a record is skipped and the tenant keeps the state before it.
 */
export function decodeTenantPause(
  key: string | null,
  value: string | null,
): TenantPause | TenantPauseDeleted | string {
  if (value === null) {
    if (key !== null && isValidTenant(key)) return { tenant: key, deleted: true };
    return 'a record without a value or a tenant for its key';
  }
  let v: unknown;
  try {
    v = JSON.parse(value);
  } catch {
    return 'a value that is not JSON';
  }
  if (typeof v !== 'object' || v === null) return 'a value that is not an object';
  const o = v as Record<string, unknown>;
  if (typeof o.tenant !== 'string' || !isValidTenant(o.tenant)) return 'no valid tenant';
  if (key !== o.tenant) return `a key (${JSON.stringify(key)}) other than its tenant`;
  if (typeof o.paused !== 'boolean') return 'no boolean "paused"';
  if (typeof o.at !== 'string' || Number.isNaN(Date.parse(o.at))) return 'no ISO time "at"';
  const text = (x: unknown) => (typeof x === 'string' ? x : null);
  return { tenant: o.tenant, paused: o.paused, reason: text(o.reason), at: o.at, by: text(o.by) };
}
