import { readdirSync } from 'node:fs';
import { dirname, extname } from 'node:path';
import { request } from '../support/http';
import { createTestApp, TestApp } from '../support/test-app';

/** Every file swagger-ui-dist ships, which SwaggerModule serves under /docs unless told otherwise. */
const DIST_FILES = readdirSync(dirname(require.resolve('swagger-ui-dist/package.json')));
/** What the page loads besides itself, as Nest's HTML names them (test/browser/swagger-ui.browser-spec.ts watches it load). */
const PAGE_FILES = [
  'swagger-ui-init.js',
  'swagger-ui-bundle.js',
  'swagger-ui-standalone-preset.js',
  'swagger-ui.css',
  'favicon-32x32.png',
  'favicon-16x16.png',
];
const TYPES: Record<string, RegExp> = {
  '.js': /^application\/javascript/,
  '.css': /^text\/css/,
  '.png': /^image\/png$/,
};

describe('what /docs serves (e2e)', () => {
  let server: TestApp;
  const get = (path: string, method = 'GET') => request(`${server.url}${path}`, { method, auth: false });
  beforeAll(async () => (server = await createTestApp()));
  afterAll(() => server.destroy());

  it('should serve the page and every file it loads, without a token', async () => {
    for (const page of ['/docs', '/docs/']) {
      const answer = await get(page);
      expect([answer.status, answer.headers.get('content-type')]).toEqual([200, 'text/html']);
      // The page names each file it loads, relative to itself.
      for (const file of PAGE_FILES) expect(answer.text).toContain(`${page === '/docs' ? './docs/' : './'}${file}`);
    }
    for (const file of PAGE_FILES) {
      const answer = await get(`/docs/${file}`);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toMatch(TYPES[extname(file)]);
    }
    expect((await get('/docs/swagger-ui-init.js')).text).toContain('"/plants"');
  });

  it("should answer everything else under /docs 404 with the Error body: swagger-ui-dist's other files, Nest's unused routes", async () => {
    const others = DIST_FILES.filter((file) => !PAGE_FILES.includes(file));
    // The ones the review found, named: they are among them.
    expect(others).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'swagger-initializer.js',
        'index.html',
        'oauth2-redirect.html',
      ]),
    );
    const paths = [...others.map((file) => `/docs/${file}`), '/docs/docs/swagger-ui-init.js', '/docs/nothing-here'];
    for (const path of paths) {
      const answer = await get(path);
      expect([path, answer.status, answer.headers.get('content-type'), answer.body]).toEqual([
        path,
        404,
        'application/json; charset=utf-8',
        { error: 404, message: `Cannot GET ${path}` },
      ]);
    }
    expect((await get('/docs/package.json', 'HEAD')).status).toBe(404);
  });
});
