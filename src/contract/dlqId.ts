import crypto from 'node:crypto';

/**
 * A DLQ record id derived from what the record is about (an execution, or a source record's coordinates), in
 * UUID form. A write repeated after a crash — a retried activity, a record redelivered to a restarted
 * ingester — carries the same id, so DLQ consumers (and `dlq replay`) can tell a repeat from a new failure.
 */
export function dlqRecordId(seed: string): string {
  const h = crypto.createHash('sha256').update(seed).digest('hex');
  const variant = ((parseInt(h.slice(16, 17), 16) & 3) | 8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
