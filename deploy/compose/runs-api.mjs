/* global process, console, Buffer -- a standalone Node script */
/* eslint no-restricted-syntax: "off" -- not the relay: its own environment, no config module */
// A sample runs API for `docker compose up`: plain Node, no dependencies, run on the stock node image (never
// part of the relay's image). It answers POST /v1/runs as an admission layer does: the first call for a
// dispatch_key creates a run (201), later ones answer 409 with the same run id. Two dispatch keys show the
// relay's other paths: one containing "flaky" gets 503 + Retry-After on its first call (a retry), one containing
// "refused" gets 422 (a dead letter). Every call is logged as one line, so `docker compose logs runs-api`
// shows the runs created. Runs live in memory: a restart forgets them.
import crypto from 'node:crypto';
import http from 'node:http';

const port = Number(process.env.PORT ?? 8080);
const token = process.env.RUNS_API_TOKEN ?? '';
const runs = new Map();
const flakyAnswered = new Set();

function answer(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/healthz') return answer(res, 200, { ok: true });
  if (req.method !== 'POST' || req.url !== '/v1/runs') return answer(res, 404, { error: 'not found' });
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const tenant = req.headers['x-tenant-id'] ?? '-';
    const log = (status, detail) =>
      console.log(`POST /v1/runs tenant=${tenant} dispatch_key=${key} -> ${status} ${detail}`);
    let body;
    let key = '-';
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      key = String(body.dispatch_key);
    } catch {
      log(400, 'body is not JSON');
      return answer(res, 400, { error: 'body is not JSON' });
    }
    if (token && req.headers.authorization !== `Bearer ${token}`) {
      log(401, 'missing or wrong bearer token');
      return answer(res, 401, { error: 'unauthorized' });
    }
    const existing = runs.get(`${tenant}/${key}`);
    if (existing) {
      log(409, `existing run ${existing}`);
      return answer(res, 409, { run_id: existing, admission: 'existing' });
    }
    if (key.includes('refused')) {
      log(422, `unknown workflow_ref ${body.workflow_ref} (sample refusal: a dead letter follows)`);
      return answer(res, 422, { error: `unknown workflow_ref ${body.workflow_ref}` });
    }
    if (key.includes('flaky') && !flakyAnswered.has(key)) {
      flakyAnswered.add(key);
      log(503, 'sample outage, Retry-After: 1 (the relay retries)');
      return answer(res, 503, { error: 'try again' }, { 'retry-after': '1' });
    }
    const runId = `run-${crypto.randomUUID()}`;
    runs.set(`${tenant}/${key}`, runId);
    log(201, `created run ${runId} for ${body.workflow_ref}`);
    return answer(res, 201, { run_id: runId, admission: 'created' });
  });
});

server.listen(port, '0.0.0.0', () => console.log(`sample runs API listening on :${port}`));
// Compose stops containers with SIGTERM; PID 1 gets no default handler for it.
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => server.close(() => process.exit(0)));
