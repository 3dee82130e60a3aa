import { Registry } from 'prom-client';
import { MetricsService } from './metrics.service';

describe('MetricsService', () => {
  it('should show each request series in http_requests_total and the histogram alike, scrape after scrape', async () => {
    const metrics = new MetricsService(new Registry());
    metrics.observeRequest('GET', '/plants/:id', 200, 0.002);
    metrics.observeRequest('GET', '/plants/:id', 200, 0.004);
    metrics.observeRequest('GET', '/plants/:id', 404, 0.001);
    metrics.observeRequest('POST', '/plants', 200, 0.03);

    for (let scrape = 0; scrape < 2; scrape++) {
      const text = await metrics.registry.metrics();
      expect(text).toContain('# TYPE http_requests_total counter');
      expect(text).toContain('http_requests_total{method="GET",route="/plants/:id",status="200"} 2\n');
      expect(text).toContain('http_requests_total{method="GET",route="/plants/:id",status="404"} 1\n');
      expect(text).toContain('http_requests_total{method="POST",route="/plants",status="200"} 1\n');
      expect(text).toContain('http_request_duration_seconds_count{method="GET",route="/plants/:id",status="200"} 2\n');
      expect(text).toContain(
        'http_request_duration_seconds_bucket{le="0.0025",method="GET",route="/plants/:id",status="200"} 1\n',
      );
    }
    metrics.observeRequest('GET', '/plants/:id', 200, 0.002);
    expect(await metrics.registry.metrics()).toContain(
      'http_requests_total{method="GET",route="/plants/:id",status="200"} 3\n',
    );
  });
});
