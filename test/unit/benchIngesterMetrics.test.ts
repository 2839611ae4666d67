/**
 * How the fairness bench reads a lone round's watches from the ingester's metrics page (tools/bench/
 * ingesterMetrics.ts): once the tenant has nothing open, a never-incremented label as zero, and null without
 * admission or without a page.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loneClosesSeen } from '../../tools/bench/ingesterMetrics';

const TYPES = [
  '# HELP poimen_ingest_lone_closes_total Watches of a lone tenant',
  '# TYPE poimen_ingest_lone_closes_total counter',
];

/** A metrics page per request, from `pages` in turn (the last one repeated). */
async function ingesterServing(pages: string[]) {
  let served = 0;
  const server = http.createServer((_req, res) => {
    res.end(pages[Math.min(served++, pages.length - 1)]);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    metricsPort: (server.address() as AddressInfo).port,
    served: () => served,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const page = (open: number | undefined, counts: Record<string, number>) =>
  [
    ...(open === undefined ? [] : [`poimen_ingest_tenant_open_dispatches{tenant="a"} ${open}`]),
    ...TYPES,
    ...Object.entries(counts).map(([via, n]) => `poimen_ingest_lone_closes_total{via="${via}"} ${n}`),
    '',
  ].join('\n');

test('read once the tenant has nothing open; a label never counted is zero', async () => {
  const ingester = await ingesterServing([page(3, { long_poll: 5 }), page(0, { long_poll: 8 })]);
  try {
    expect(await loneClosesSeen(ingester, 'a', 10_000)).toEqual({
      visibility: 0,
      long_poll: 8,
      settled: true,
    });
    expect(ingester.served()).toBe(2);
  } finally {
    await ingester.close();
  }
});

test('still open at the deadline: what was counted, marked unsettled', async () => {
  const ingester = await ingesterServing([page(2, { visibility: 7, long_poll: 1 })]);
  try {
    expect(await loneClosesSeen(ingester, 'a', 600)).toEqual({ visibility: 7, long_poll: 1, settled: false });
  } finally {
    await ingester.close();
  }
});

test('without admission (no open gauge for the tenant) nothing was watched: null, not zero', async () => {
  const ingester = await ingesterServing([page(undefined, {})]);
  try {
    expect(await loneClosesSeen(ingester, 'a', 10_000)).toBeNull();
  } finally {
    await ingester.close();
  }
});

test('no page by the deadline: null', async () => {
  const ingester = await ingesterServing([]);
  const port = ingester.metricsPort;
  await ingester.close();
  expect(await loneClosesSeen({ metricsPort: port }, 'a', 600)).toBeNull();
});
