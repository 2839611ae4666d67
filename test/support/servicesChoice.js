'use strict';
/**
 * Which real services the integration project runs on, and so how many test files may run at once. Read by
 * jest.config.js (its workers) before any worker starts, and by the global setup (test/support/globalSetup.ts):
 *   1. KAFKA_BROKERS and TEMPORAL_ADDRESS set: those services, one set shared by every file;
 *   2. else a Docker engine answers: testcontainers, one set too;
 *   3. else the project's own local stack, one per jest worker (test/support/workerStack.ts).
 * Plain JavaScript: jest.config.js loads it without a transform.
 */
const { spawnSync } = require('node:child_process');
const os = require('node:os');

/** At most this many workers, each with a stack of its own (a broker JVM and a dev server, ~1.5 GB together). */
const MOST_STACKS = 4;
/** Memory for each worker: its stack, its relays and its jest process (and a browser, in the Web UI test). */
const BYTES_PER_WORKER = 3 * 1024 ** 3;

function servicesGiven(env = process.env) {
  return Boolean(env.KAFKA_BROKERS && env.TEMPORAL_ADDRESS);
}

function dockerAnswers() {
  const probe = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], {
    stdio: 'ignore',
    timeout: 5000,
  });
  return probe.status === 0;
}

/**
 * jest's workers: one per core on local stacks, up to MOST_STACKS and to what the memory holds; one where the
 * services are a single set, so a fault test's restart never lands in a neighbour's middle.
 */
function testWorkers(env = process.env) {
  if (servicesGiven(env) || dockerAnswers()) return 1;
  const byMemory = Math.floor(os.totalmem() / BYTES_PER_WORKER);
  return Math.max(1, Math.min(MOST_STACKS, os.availableParallelism(), byMemory));
}

/**
 * Integration files whose bounds on time were measured with the machine to themselves: how late a dead letter may
 * be after its budget, calls per second while the breaker probes, seconds to a retry. Beside another worker's
 * files on 2 cores they measure the neighbour (it_outage_budget's dead letters came 24 s late against a 20 s
 * bound), so `npm test` runs them after the rest, one at a time (jest.alone.config.js, scripts/test.js).
 */
const ALONE = [
  'it_outage_budget',
  'it_outage_pacing',
  'it_breaker_neighbours',
  'it_attempts',
  'it_retry_after',
  'it_cli_credentials',
].map((name) => `<rootDir>/test/${name}.test.ts`);

module.exports = { servicesGiven, dockerAnswers, testWorkers, ALONE };
