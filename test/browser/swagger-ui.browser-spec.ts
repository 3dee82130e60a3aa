import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BrowserContext, chromium } from 'playwright-core';
import { createTestApp, TEST_TOKEN, TestApp } from '../support/test-app';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const OUTPUT = join(__dirname, '..', '..', 'test-output');

describe('the Swagger UI at /docs, in headless Chromium', () => {
  let server: TestApp;
  let browser: BrowserContext;
  let profile: string;

  beforeAll(async () => {
    server = await createTestApp();
    profile = mkdtempSync(join(tmpdir(), 'plant-store-chromium-'));
    // A fresh profile (--user-data-dir) each run. This machine has no internet: without these flags
    // Chromium's background connections fail.
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await server.destroy();
    rmSync(profile, { recursive: true, force: true });
  });

  it('should authorize, run "Try it out" on POST /plants and GET /plants, and show their 200s', async () => {
    const page = await browser.newPage();
    const cspErrors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) cspErrors.push(message.text());
    });
    const answered: { path: string; status: number }[] = [];
    page.on('response', (response) =>
      answered.push({ path: new URL(response.url()).pathname, status: response.status() }),
    );
    await page.goto(`${server.url}/docs`);

    await page.click('button.authorize');
    await page.fill('.auth-container input', TEST_TOKEN);
    await page.click('.auth-btn-wrapper button.authorize');
    await page.click('.auth-btn-wrapper button.btn-done');
    // The token stays in the page: nothing of it in the browser's storage for the next visitor.
    // (An expression string: the tests are compiled without the DOM's types.)
    const stored = await page.evaluate<string>('JSON.stringify({ ...localStorage, ...sessionStorage })');
    expect(stored).not.toContain(TEST_TOKEN);

    await page.click('#operations-plants-createPlant .opblock-summary');
    await page.click('#operations-plants-createPlant .try-out__btn');
    await page.fill(
      '#operations-plants-createPlant textarea.body-param__text',
      '{"id": 9007199254740993, "name": "Browser Fern", "tag": "ui"}',
    );
    await page.click('#operations-plants-createPlant button.execute');

    const response = page.locator('#operations-plants-createPlant .live-responses-table tr.response');
    await response.waitFor();
    expect((await response.locator('.response-col_status').textContent())?.trim()).toBe('200');
    const body = await response.locator('.response-col_description pre.microlight').first().textContent();
    expect(JSON.parse(body ?? '')).toEqual({ name: 'Browser Fern', tag: 'ui' });

    // The list operation, with its query parameters as the document declares them.
    await page.click('#operations-plants-listPlants .opblock-summary');
    await page.click('#operations-plants-listPlants .try-out__btn');
    await page.fill('#operations-plants-listPlants input[placeholder="limit"]', '10');
    await page.click('#operations-plants-listPlants button.execute');
    const listed = page.locator('#operations-plants-listPlants .live-responses-table tr.response');
    await listed.waitFor();
    expect((await listed.locator('.response-col_status').textContent())?.trim()).toBe('200');
    const listedUrl = await page.locator('#operations-plants-listPlants .request-url pre').textContent();
    expect(listedUrl?.trim()).toBe(`${server.url}/plants?limit=10`);
    const array = await listed.locator('.response-col_description pre.microlight').first().textContent();
    // The UI shows what its JSON.parse made of the body: the name and tag survive, the id above 2^53
    // is the one thing it cannot show exactly (the README says how a client keeps it).
    expect(JSON.parse(array ?? '')).toEqual([{ id: expect.any(Number), name: 'Browser Fern', tag: 'ui' }]);

    mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: join(OUTPUT, 'swagger-ui-try-it-out.png'), fullPage: true });
    expect(cspErrors).toEqual([]);

    // What the page loaded, every request answered: /docs serves these and 404s the rest
    // (test/e2e/docs-files.e2e-spec.ts). A browser takes one of the two icons the page names, or none.
    expect(answered.filter(({ status }) => status >= 400)).toEqual([]);
    const fromDocs = [...new Set(answered.map(({ path }) => path).filter((path) => path.startsWith('/docs')))].sort();
    const icons = ['/docs/favicon-16x16.png', '/docs/favicon-32x32.png'];
    expect(fromDocs.filter((path) => !icons.includes(path))).toEqual([
      '/docs',
      '/docs/swagger-ui-bundle.js',
      '/docs/swagger-ui-init.js',
      '/docs/swagger-ui-standalone-preset.js',
      '/docs/swagger-ui.css',
    ]);
  });
});
