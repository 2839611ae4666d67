import { request } from 'undici';
import { SampleRunsApi } from '../../devstack/sampleRunsApi';

async function post(api: SampleRunsApi, body: string) {
  const res = await request(`${api.url}/v1/runs`, { method: 'POST', body });
  return {
    status: res.statusCode,
    retryAfter: res.headers['retry-after'],
    json: (await res.body.json()) as Record<string, unknown>,
  };
}

describe('the sample runs API the demo and compose ship', () => {
  let api: SampleRunsApi;
  beforeEach(async () => {
    api = await SampleRunsApi.start();
  });
  afterEach(() => api.close());

  it('admits a dispatch_key once (201), then answers 409 with the same run id', async () => {
    const first = await post(api, '{"dispatch_key":"k1"}');
    const again = await post(api, '{"dispatch_key":"k1"}');
    expect(first).toMatchObject({ status: 201, json: { admission: 'created' } });
    expect(again).toMatchObject({ status: 409, json: { admission: 'existing', run_id: first.json.run_id } });
    expect(api.callsFor('k1').map((c) => c.status)).toEqual([201, 409]);
  });

  it('sends the answers given for a dispatch_key first, then admits it', async () => {
    api.answerFirst('k2', { status: 503, retryAfter: '1' });
    const refused = await post(api, '{"dispatch_key":"k2"}');
    expect(refused).toMatchObject({ status: 503, retryAfter: '1' });
    expect(api.runs.has('k2')).toBe(false);
    expect((await post(api, '{"dispatch_key":"k2"}')).status).toBe(201);
  });

  it('answers 400 to a body without a dispatch_key', async () => {
    expect((await post(api, 'not json')).status).toBe(400);
    expect(api.calls).toEqual([]);
  });
});
