/**
 * The soak's exactly-once account of the relay itself, not of the API double: the double answers 201 once per
 * key by construction, so "one 201 per key" cannot catch a relay that POSTs every dispatch twice. What can:
 * every 409 must be explained by a fault on that key that loses the relay's knowledge of a run it created, and
 * every repeated dead letter by a rewind of its partition.
 */

/** When a conclusive answer (201/409) may not reach Temporal as the activity's result. */
export interface FaultWindow {
  fromMs: number;
  toMs: number;
  cause: 'worker_kill' | 'temporal_outage' | 'postgres_outage';
}

export interface ApiCall {
  dispatchKey: string | undefined;
  answer: number | 'dropped';
  receivedAtMs: number;
}

/** A client-side attempt timeout the worker logged: it stopped waiting for this key's answer at `atMs`. */
export interface AttemptTimeout {
  dispatchKey: string;
  atMs: number;
}

export interface DedupAccount {
  dedup_409: number;
  /** Answers dropped after the run was admitted: the relay never saw them, its retry must get 409. */
  dropped_after_admit: number;
  /** 201/409 answers inside a worker-kill or Temporal/PostgreSQL-outage window: the activity's result may be lost. */
  answered_in_fault_windows: number;
  /**
   * Attempts the worker timed out on (client side) after the double had answered that call 201/409: the relay
   * never read the answer, its retry must get 409.
   */
  client_timeouts_after_admit: number;
  /** Every fault that can make one 409: the three above. */
  bound: number;
  /** 409s on a key beyond that key's own faults: a relay repeating a call it had an answer for. */
  unexplained: number;
  unexplained_keys: string[];
}

export function dedupAccount(
  calls: ApiCall[],
  droppedAfterAdmit: Map<string, number>,
  windows: FaultWindow[],
  timeouts: AttemptTimeout[] = [],
): DedupAccount {
  const per = new Map<string, { c409: number; explained: number }>();
  const of = (k: string) => {
    let e = per.get(k);
    if (!e) per.set(k, (e = { c409: 0, explained: 0 }));
    return e;
  };
  let inWindows = 0;
  let dedup = 0;
  /** Calls whose lost answer already explains a 409: a timeout abandoning one of them explains nothing more. */
  const explainedCalls = new Set<ApiCall>();
  for (const c of calls) {
    if (c.dispatchKey === undefined) continue;
    if (c.answer === 409) {
      dedup++;
      of(c.dispatchKey).c409++;
    }
    const conclusive = c.answer === 201 || c.answer === 409;
    if (conclusive && windows.some((w) => c.receivedAtMs >= w.fromMs && c.receivedAtMs <= w.toMs)) {
      inWindows++;
      of(c.dispatchKey).explained++;
      explainedCalls.add(c);
    }
  }
  let drops = 0;
  for (const [k, n] of droppedAfterAdmit) {
    drops += n;
    of(k).explained += n;
  }
  const timedOut = timeoutsAfterAdmit(calls, timeouts, explainedCalls);
  for (const k of timedOut) of(k).explained++;
  const unexplainedKeys = [...per].filter(([, e]) => e.c409 > e.explained).map(([k]) => k);
  return {
    dedup_409: dedup,
    dropped_after_admit: drops,
    answered_in_fault_windows: inWindows,
    client_timeouts_after_admit: timedOut.length,
    bound: drops + inWindows + timedOut.length,
    unexplained: unexplainedKeys.reduce((s, k) => s + per.get(k)!.c409 - per.get(k)!.explained, 0),
    unexplained_keys: unexplainedKeys.slice(0, 20),
  };
}

/**
 * The keys of timeouts whose abandoned call the double answered conclusively. One activity's attempts on a key are
 * sequential, so the call a timeout abandoned is the key's latest call the double received before the timeout was
 * logged (not a window: a stalled worker logs its timeout late); it explains a 409 only when that call got 201/409.
 * Each call is claimed once at most, by a timeout or already by a fault window (`claimed`).
 */
function timeoutsAfterAdmit(calls: ApiCall[], timeouts: AttemptTimeout[], claimed: Set<ApiCall>): string[] {
  const keys: string[] = [];
  for (const t of [...timeouts].sort((a, b) => a.atMs - b.atMs)) {
    const before = calls.filter((c) => c.dispatchKey === t.dispatchKey && c.receivedAtMs <= t.atMs);
    const abandoned = before.reduce<ApiCall | undefined>(
      (latest, c) => (latest === undefined || c.receivedAtMs >= latest.receivedAtMs ? c : latest),
      undefined,
    );
    if (!abandoned || claimed.has(abandoned) || (abandoned.answer !== 201 && abandoned.answer !== 409))
      continue;
    claimed.add(abandoned);
    keys.push(t.dispatchKey);
  }
  return keys;
}

/** Offsets of one partition that an ingester kill, broker kill or the rebalance after it may redeliver. */
export interface RewindWindow {
  partition: number;
  /** The group's committed offset before the event. */
  from: number;
  /** The log end once the group had time to settle after it. */
  to: number;
}

export interface DeadLetterSeen {
  id: string;
  partition: number;
  offset: number;
}

export interface DlqAccount {
  dlq_ids: number;
  /** Copies beyond one per id. */
  dlq_repeats: number;
  dlq_max_copies_per_id: number;
  /** Copies of an id beyond 1 + the rewinds that covered its source offset: the design allows none. */
  dlq_repeats_unexplained: number;
}

export function dlqAccount(seen: DeadLetterSeen[], rewinds: RewindWindow[]): DlqAccount {
  const copies = new Map<string, { n: number; partition: number; offset: number }>();
  for (const d of seen) {
    const e = copies.get(d.id);
    if (e) e.n++;
    else copies.set(d.id, { n: 1, partition: d.partition, offset: d.offset });
  }
  let repeats = 0;
  let unexplained = 0;
  let max = 0;
  for (const e of copies.values()) {
    max = Math.max(max, e.n);
    repeats += e.n - 1;
    const covering = rewinds.filter(
      (r) => r.partition === e.partition && e.offset >= r.from && e.offset < r.to,
    ).length;
    unexplained += Math.max(0, e.n - 1 - covering);
  }
  return {
    dlq_ids: copies.size,
    dlq_repeats: repeats,
    dlq_max_copies_per_id: max,
    dlq_repeats_unexplained: unexplained,
  };
}

/**
 * Source records dead-lettered under more than one id. A record redelivered after a rewind may be dead-lettered
 * again, but under the same id (contract §6); a second id is a second failure of one dispatch, e.g. a re-run.
 */
export function sourcesWithTwoIds(seen: DeadLetterSeen[]): number {
  const ids = new Map<string, Set<string>>();
  for (const d of seen) {
    const k = `${d.partition}:${d.offset}`;
    let s = ids.get(k);
    if (!s) ids.set(k, (s = new Set()));
    s.add(d.id);
  }
  return [...ids.values()].filter((s) => s.size > 1).length;
}
