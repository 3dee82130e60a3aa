import { tracingRequested } from './trace-context';
import { originOnly } from './tracing';

describe('tracingRequested', () => {
  it.each([
    [{}, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: '' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, true],
    [{ OTEL_TRACES_EXPORTER: 'otlp' }, true],
    [{ OTEL_TRACES_EXPORTER: 'console' }, true],
    [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, false],
  ])('should start the SDK for %j: %s', (env, expected) => {
    expect(tracingRequested(env as NodeJS.ProcessEnv)).toBe(expected);
  });
});

describe('originOnly (the undici spans of webhook sends)', () => {
  it.each([
    ['http://127.0.0.1:8080', { 'url.full': 'http://127.0.0.1:8080', 'url.path': undefined, 'url.query': undefined }],
    [
      'https://hooks.example.com',
      { 'url.full': 'https://hooks.example.com', 'url.path': undefined, 'url.query': undefined },
    ],
    [
      new URL('https://hooks.example.com:8443'),
      { 'url.full': 'https://hooks.example.com:8443', 'url.path': undefined, 'url.query': undefined },
    ],
  ])('should replace the URL attributes of a request to %s by its origin', (origin, expected) => {
    expect(originOnly({ origin })).toEqual(expected);
  });
});
