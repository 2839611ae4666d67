/**
 * What the dispatches of a bench window cost PostgreSQL (the cluster profile's Temporal persistence and
 * visibility): committed transactions from pg_stat_database and rows written from pg_stat_user_tables, read with
 * psql before and after the window. The arithmetic is pure (pgCostPerDispatch); readPgCounters touches the server.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { childEnv } from '#devstack/config';
import { round } from './measure';

/** Temporal's databases on the cluster profile (devstack/stack/temporalServerService.ts). */
export const TEMPORAL_DATABASES = ['temporal', 'temporal_visibility'] as const;

export interface TableRows {
  ins: number;
  upd: number;
  del: number;
}

export interface DbCounters {
  xact_commit: number;
  xact_rollback: number;
  tables: Record<string, TableRows>;
}

export type PgCounters = Record<string, DbCounters>;

function psql(bin: string, port: number, db: string, sql: string): string {
  const res = spawnSync(
    path.join(bin, 'psql'),
    ['-X', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', db, '-F', '|', '-tAc', sql],
    { encoding: 'utf8', env: childEnv({ PGPASSWORD: '', PGOPTIONS: '' }) },
  );
  if (res.error || res.status !== 0) {
    const why = res.error?.message ?? (res.stderr ?? '').trim().split('\n').pop();
    throw new Error(`bench: psql on ${db} failed: ${why}`);
  }
  return res.stdout.trim();
}

/** Parses `xact_commit|xact_rollback` and `relname|ins|upd|del` lines as psql -tA -F'|' prints them. */
export function parseDbCounters(database: string, tables: string): DbCounters {
  const [commit, rollback] = database.split('|').map(Number);
  if (!Number.isFinite(commit) || !Number.isFinite(rollback)) {
    throw new Error(`bench: not a pg_stat_database row: ${database.slice(0, 80)}`);
  }
  const out: DbCounters = { xact_commit: commit!, xact_rollback: rollback!, tables: {} };
  for (const line of tables.split('\n').filter(Boolean)) {
    const [name, ins, upd, del] = line.split('|');
    out.tables[name!] = { ins: Number(ins), upd: Number(upd), del: Number(del) };
  }
  return out;
}

/** The counters of Temporal's databases now (PostgreSQL publishes a backend's counts within about 10 s). */
export function readPgCounters(bin: string, port: number): PgCounters {
  const out: PgCounters = {};
  for (const db of TEMPORAL_DATABASES) {
    out[db] = parseDbCounters(
      psql(bin, port, db, `SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = '${db}'`),
      psql(bin, port, db, 'SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables'),
    );
  }
  return out;
}

export interface PgCost {
  /** Committed transactions per dispatch (reads included: a SELECT outside a transaction commits one). */
  xact_commit: number;
  rows_inserted: number;
  rows_updated: number;
  rows_deleted: number;
  /** Per table that changed, rows per dispatch. */
  tables: Record<string, TableRows>;
}

const per = (x: number, n: number) => round(x / n, 3);

/**
 * Per dispatch, over a window: the counters' differences, with `idlePerS` (the same differences per second with
 * nothing to do, measured apart) times the window's seconds taken out when given.
 */
export function pgCostPerDispatch(
  before: PgCounters,
  after: PgCounters,
  dispatches: number,
  idle?: { perS: PgCounters; windowS: number },
): Record<string, PgCost> {
  const out: Record<string, PgCost> = {};
  for (const [db, b] of Object.entries(after)) {
    const a = before[db];
    if (!a) throw new Error(`bench: no reading of database ${db} before the window`);
    const idleOf = (pick: (c: DbCounters) => number) =>
      idle?.perS[db] ? pick(idle.perS[db]) * idle.windowS : 0;
    const tables: Record<string, TableRows> = {};
    let ins = 0;
    let upd = 0;
    let del = 0;
    for (const [name, t] of Object.entries(b.tables)) {
      const t0 = a.tables[name] ?? { ins: 0, upd: 0, del: 0 };
      const i = idle?.perS[db]?.tables[name];
      const d = {
        ins: t.ins - t0.ins - (i ? i.ins * idle!.windowS : 0),
        upd: t.upd - t0.upd - (i ? i.upd * idle!.windowS : 0),
        del: t.del - t0.del - (i ? i.del * idle!.windowS : 0),
      };
      ins += d.ins;
      upd += d.upd;
      del += d.del;
      if (d.ins !== 0 || d.upd !== 0 || d.del !== 0) {
        tables[name] = {
          ins: per(d.ins, dispatches),
          upd: per(d.upd, dispatches),
          del: per(d.del, dispatches),
        };
      }
    }
    out[db] = {
      xact_commit: per(b.xact_commit - a.xact_commit - idleOf((c) => c.xact_commit), dispatches),
      rows_inserted: per(ins, dispatches),
      rows_updated: per(upd, dispatches),
      rows_deleted: per(del, dispatches),
      tables,
    };
  }
  return out;
}

/** The differences between two readings per second of the window between them: an idle rate. */
export function pgRate(before: PgCounters, after: PgCounters, windowS: number): PgCounters {
  const out: PgCounters = {};
  for (const [db, b] of Object.entries(after)) {
    const a = before[db]!;
    const tables: Record<string, TableRows> = {};
    for (const [name, t] of Object.entries(b.tables)) {
      const t0 = a.tables[name] ?? { ins: 0, upd: 0, del: 0 };
      tables[name] = {
        ins: (t.ins - t0.ins) / windowS,
        upd: (t.upd - t0.upd) / windowS,
        del: (t.del - t0.del) / windowS,
      };
    }
    out[db] = {
      xact_commit: (b.xact_commit - a.xact_commit) / windowS,
      xact_rollback: (b.xact_rollback - a.xact_rollback) / windowS,
      tables,
    };
  }
  return out;
}
