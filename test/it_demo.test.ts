/** The README's first command: `npm run demo` runs the dev entry's `demo` end to end on the local stack. */
import { runDevCli } from './support/cli';

test('demo relays the sample dispatches: three runs, one duplicate absorbed, a 422 and a malformed record dead-lettered', async () => {
  const res = await runDevCli(['demo']);
  expect(res.stderr).not.toMatch(/not every dispatch/);
  expect(res.code).toBe(0);
  expect(res.stdout).toMatch(/demo-\w+-welcome\s+workflow COMPLETED\s+API calls 201/);
  expect(res.stdout).toMatch(/demo-\w+-flaky\s+workflow COMPLETED\s+API calls 503, 201/);
  expect(res.stdout).toMatch(/demo-\w+-refused\s+workflow FAILED\s+API calls 422/);
  expect(res.stdout).toMatch(/no second run \(runs API saw 1 call\)/);
  expect(res.stdout).toMatch(/malformed_dispatch .*not valid JSON/);
  expect(res.stdout).toMatch(/dispatch_failure .*422/);
  expect(res.stdout).toContain('/namespaces/default/workflows?query=TenantId%3D%22demo%22');
});
