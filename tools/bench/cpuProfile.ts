/**
 * Reading V8 CPU profiles (`node --cpu-prof`'s .cpuprofile files) for the relay profiler (./profileRelay.ts):
 * the time of each sample inside a window, and its sum per function and per package or file group, self (the
 * sample's leaf) and total (anywhere on its stack, once per sample). Pure functions over the profile's JSON.
 */

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

/** The .cpuprofile JSON: times in microseconds of the monotonic clock (process.hrtime's). */
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** A sample's stack, leaf first, and the microseconds it stands for. */
export interface TimedStack {
  frames: CallFrame[];
  us: number;
}

/** V8's pseudo-frames: time the thread was not in JavaScript. */
export const IDLE = '(idle)';
export const PROGRAM = '(program)';
export const GC = '(garbage collector)';
const ROOT = '(root)';

/**
 * Each sample's stack and the time up to the next sample (the last one gets the profile's end), keeping only
 * samples whose timestamp falls in [fromUs, toUs]; idle samples are dropped.
 */
export function timedStacks(p: CpuProfile, fromUs = -Infinity, toUs = Infinity): TimedStack[] {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stacks = new Map<number, CallFrame[]>();
  const stackOf = (id: number): CallFrame[] => {
    const known = stacks.get(id);
    if (known) return known;
    const frames: CallFrame[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const node = byId.get(at);
      if (!node) throw new Error(`cpuprofile: sample names node ${at}, which the profile lacks`);
      if (node.callFrame.functionName !== ROOT || node.callFrame.url !== '') frames.push(node.callFrame);
    }
    stacks.set(id, frames);
    return frames;
  };
  const out: TimedStack[] = [];
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    const next = i + 1 < p.samples.length ? t + (p.timeDeltas[i + 1] ?? 0) : p.endTime;
    if (t < fromUs || t > toUs) continue;
    const frames = stackOf(p.samples[i]!);
    if (frames[0]?.functionName === IDLE) continue;
    out.push({ frames, us: Math.max(0, next - t) });
  }
  return out;
}

/**
 * What a frame's time is booked to: an npm package (a @temporalio package by its lib/ folder, e.g.
 * `@temporalio/worker/workflow`), the workflow bundle run in the vm sandbox, the relay's own files, Node's
 * internals, GC, or V8's `(program)`. Frames without a script (builtins like JSON.parse) return undefined: the
 * caller books them to the nearest frame below that has one.
 */
export function groupOf(f: CallFrame): string | undefined {
  if (f.url === '') {
    if (f.functionName === GC) return 'GC';
    if (f.functionName === PROGRAM) return '(program): native, outside JS';
    return undefined;
  }
  const url = f.url.replace(/^file:\/\//, '');
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + '/node_modules/'.length).split('/');
    const pkg = parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
    if (pkg.startsWith('@temporalio/')) {
      const rest = parts.slice(parts[0]!.startsWith('@') ? 2 : 1);
      const lib = rest[0] === 'lib' && rest.length > 2 ? `/${rest[1]}` : '';
      return `${pkg}${lib}`;
    }
    return pkg;
  }
  if (/workflow-bundle[^/]*\.js$/.test(url) || url.includes('webpack')) return 'workflow bundle (vm)';
  if (url.startsWith('node:') || !url.startsWith('/')) return 'node internals';
  const dist = url.search(/\/dist\/(?!.*node_modules)/);
  if (dist >= 0)
    return `relay ${url
      .slice(dist + 1)
      .split('/')
      .slice(0, 2)
      .join('/')}`;
  return 'other';
}

export interface Row {
  name: string;
  selfMs: number;
  totalMs: number;
}

/** The key of a function: its name, file and line. */
export function functionKey(f: CallFrame): string {
  const file = f.url.replace(/^file:\/\//, '').replace(/^.*\/node_modules\//, '');
  return `${f.functionName || '(anonymous)'} ${file}:${f.lineNumber + 1}`;
}

function addTo(map: Map<string, Row>, name: string, field: 'selfMs' | 'totalMs', ms: number) {
  const row = map.get(name) ?? { name, selfMs: 0, totalMs: 0 };
  row[field] += ms;
  map.set(name, row);
}

/** Self and total milliseconds per function and per group, largest self first. */
export function aggregate(stacks: TimedStack[]): { functions: Row[]; groups: Row[]; totalMs: number } {
  const functions = new Map<string, Row>();
  const groups = new Map<string, Row>();
  let totalMs = 0;
  for (const { frames, us } of stacks) {
    const ms = us / 1000;
    totalMs += ms;
    const leaf = frames[0];
    if (leaf) addTo(functions, functionKey(leaf), 'selfMs', ms);
    const selfGroup = frames.map(groupOf).find((g) => g !== undefined) ?? 'V8 builtins';
    addTo(groups, selfGroup, 'selfMs', ms);
    const seenF = new Set<string>();
    const seenG = new Set<string>();
    for (const f of frames) {
      const k = functionKey(f);
      if (!seenF.has(k)) addTo(functions, k, 'totalMs', ms);
      seenF.add(k);
      const g = groupOf(f);
      if (g !== undefined && !seenG.has(g)) addTo(groups, g, 'totalMs', ms);
      if (g !== undefined) seenG.add(g);
    }
  }
  const sorted = (m: Map<string, Row>) => [...m.values()].sort((a, b) => b.selfMs - a.selfMs);
  return { functions: sorted(functions), groups: sorted(groups), totalMs };
}

/**
 * A fixed-width table of rows: self and total per dispatch and self's share of all profiled time. `scale` turns
 * sampled ms into CPU ms: samples are spaced in wall time, so a thread that waits for a core (a busy machine, a
 * niced process) gets longer samples than its CPU time; the shares stay, the thread's CPU from /proc sets the sum.
 */
export function rowsTable(rows: Row[], totalMs: number, dispatches: number, top: number, scale = 1): string {
  const per = (ms: number) => ((ms * scale) / dispatches).toFixed(3);
  const pct = (ms: number) => `${((100 * ms) / (totalMs || 1)).toFixed(1).padStart(5)} %`;
  const lines = [`${'self ms/d'.padStart(9)} ${'share'.padStart(7)} ${'total ms/d'.padStart(10)}  name`];
  for (const r of rows.slice(0, top)) {
    lines.push(`${per(r.selfMs).padStart(9)} ${pct(r.selfMs)} ${per(r.totalMs).padStart(10)}  ${r.name}`);
  }
  return `${lines.join('\n')}\n`;
}
