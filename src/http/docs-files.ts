import { FastifyInstance, onRequestHookHandler } from 'fastify';

/**
 * What the docs page (`/docs`, or `/docs/`) loads besides itself, as Nest's HTML names them: Nest's
 * init script, and swagger-ui-dist's script, style and icon files.
 */
const DOCS_PAGE_FILES = [
  'swagger-ui-init.js',
  'swagger-ui-bundle.js',
  'swagger-ui-standalone-preset.js',
  'swagger-ui.css',
  'favicon-32x32.png',
  'favicon-16x16.png',
] as const;

/**
 * Under `/<docsPath>/` only the page and what it loads answer. SwaggerModule serves the whole
 * swagger-ui-dist folder there (its package.json and README, the petstore initializer, the
 * OAuth2 redirect page) and has no option to narrow it: its @fastify/static registration takes no
 * `allowedPath`. So every route under that prefix (the static files' wildcard, and Nest's own
 * `index.html` and second init script, which the page does not load) gets an `onRequest` hook that
 * hands any other path to the not-found handler: the 404 with the Error body, as any unknown route
 * gets. Call it before `SwaggerModule.setup`: its routes are added later and pass through `onRoute`.
 */
export function serveOnlyWhatTheDocsPageLoads(fastify: FastifyInstance, docsPath: string): void {
  const prefix = `/${docsPath}/`;
  const loaded = new Set([prefix, ...DOCS_PAGE_FILES.map((file) => prefix + file)]);
  const onlyLoaded: onRequestHookHandler = (request, reply, done) => {
    const query = request.url.indexOf('?');
    if (loaded.has(query === -1 ? request.url : request.url.slice(0, query))) return done();
    reply.callNotFound();
  };
  fastify.addHook('onRoute', (route) => {
    if (!route.url.startsWith(prefix)) return;
    // A new array: Fastify's HEAD route for a GET starts from a copy of the GET's options.
    route.onRequest = [...[route.onRequest ?? []].flat(), onlyLoaded];
  });
}
