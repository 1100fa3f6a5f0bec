import { Counter, Registry } from 'prom-client';
import { serveMonitorEndpoint } from '../../streams/monitorEndpoint';

describe('the monitor endpoint', () => {
  it('serves /metrics from its own registry, /health, /ready from the readiness check, 404 otherwise', async () => {
    const registry = new Registry();
    const counter = new Counter({ name: 'rxfleet_spec_total', help: 'a counter', registers: [registry] });
    counter.inc(3);
    let ready = false;
    const endpoint = await serveMonitorEndpoint({
      port: 0,
      host: '127.0.0.1',
      registry,
      ready: () => ready,
      describe: () => ({ nats: 'connected' }),
    });
    const base = `http://127.0.0.1:${endpoint.port}`;
    try {
      const metrics = await fetch(`${base}/metrics`);
      expect(metrics.status).toBe(200);
      expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(await metrics.text()).toContain('rxfleet_spec_total 3');

      const health = await fetch(`${base}/health`);
      expect([health.status, await health.json()]).toEqual([200, { status: 'ok', nats: 'connected' }]);

      expect((await fetch(`${base}/ready`)).status).toBe(503);
      ready = true;
      expect((await fetch(`${base}/ready`)).status).toBe(200);

      expect((await fetch(`${base}/nope`)).status).toBe(404);
      expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(405);
    } finally {
      await endpoint.close();
    }
  });
});
