/**
 * The worker profiler's reading of V8 .cpuprofile files (tools/bench/cpuProfile.ts): sample times within a window,
 * self and total time per function and per package group, and where builtins' time is booked, over a hand-made
 * profile.
 */
import {
  type CallFrame,
  type CpuProfile,
  aggregate,
  groupOf,
  timedStacks,
} from '../../tools/bench/cpuProfile';

const frame = (functionName: string, url = ''): CallFrame => ({
  functionName,
  url,
  lineNumber: 0,
  columnNumber: 0,
});

const NM = 'file:///app/node_modules';
// root → run (relay) → fromPayload (@temporalio/common converter) → parse (builtin, no url)
//      → (idle), (garbage collector)
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame('(root)'), children: [2, 5, 6] },
    { id: 2, callFrame: frame('run', 'file:///app/dist/activities/postRun.js'), children: [3] },
    {
      id: 3,
      callFrame: frame('fromPayload', `${NM}/@temporalio/common/lib/converter/payload-converter.js`),
      children: [4],
    },
    { id: 4, callFrame: frame('parse') },
    { id: 5, callFrame: frame('(idle)') },
    { id: 6, callFrame: frame('(garbage collector)') },
  ],
  startTime: 1000,
  endTime: 1100,
  // at 1010 parse, 1020 run, 1040 idle, 1060 gc, 1070 parse; each lasts until the next (the last to the end)
  samples: [4, 2, 5, 6, 4],
  timeDeltas: [10, 10, 20, 20, 10],
};

describe('timedStacks', () => {
  test('each sample lasts until the next, idle samples are dropped, and the root is not a frame', () => {
    const stacks = timedStacks(profile);
    expect(stacks.map((s) => [s.frames[0]!.functionName, s.us])).toEqual([
      ['parse', 10],
      ['run', 20],
      ['(garbage collector)', 10],
      ['parse', 30],
    ]);
    expect(stacks[0]!.frames.map((f) => f.functionName)).toEqual(['parse', 'fromPayload', 'run']);
  });

  test('keeps only samples whose time falls in the window', () => {
    expect(timedStacks(profile, 1015, 1065).map((s) => s.frames[0]!.functionName)).toEqual([
      'run',
      '(garbage collector)',
    ]);
  });

  test('a sample naming a node the profile lacks is an error, not a silent zero', () => {
    expect(() => timedStacks({ ...profile, samples: [99], timeDeltas: [1] })).toThrow(/node 99/);
  });
});

describe('groupOf', () => {
  test.each([
    [`${NM}/@temporalio/worker/lib/workflow/vm-shared.js`, '@temporalio/worker/workflow'],
    [`${NM}/@temporalio/worker/lib/worker.js`, '@temporalio/worker'],
    [`${NM}/@opentelemetry/api/build/src/api/context.js`, '@opentelemetry/api'],
    [`${NM}/pino/lib/proto.js`, 'pino'],
    ['node:internal/streams/readable', 'node internals'],
    ['file:///app/dist/workflow-bundle-ab12.js', 'workflow bundle (vm)'],
    ['file:///app/dist/activities/postRun.js', 'relay dist/activities'],
  ])('%s → %s', (url, group) => {
    expect(groupOf(frame('f', url))).toBe(group);
  });

  test('GC and (program) are groups; a builtin has none of its own', () => {
    expect(groupOf(frame('(garbage collector)'))).toBe('GC');
    expect(groupOf(frame('(program)'))).toMatch(/^\(program\)/);
    expect(groupOf(frame('parse'))).toBeUndefined();
  });
});

describe('aggregate', () => {
  test('self goes to the leaf (a builtin to its caller’s group); total to everything on the stack, once', () => {
    const { functions, groups, totalMs } = aggregate(timedStacks(profile));
    expect(totalMs).toBeCloseTo(0.07);
    const g = Object.fromEntries(groups.map((r) => [r.name, [r.selfMs, r.totalMs]]));
    expect(g['@temporalio/common/converter']![0]).toBeCloseTo(0.04);
    expect(g['@temporalio/common/converter']![1]).toBeCloseTo(0.04);
    expect(g['relay dist/activities']![0]).toBeCloseTo(0.02);
    expect(g['relay dist/activities']![1]).toBeCloseTo(0.06);
    expect(g.GC![0]).toBeCloseTo(0.01);
    expect(groups[0]!.name).toBe('@temporalio/common/converter');
    const parse = functions.find((f) => f.name.startsWith('parse'))!;
    expect(parse.selfMs).toBeCloseTo(0.04);
    expect(functions.find((f) => f.name.startsWith('run '))!.totalMs).toBeCloseTo(0.06);
  });
});
