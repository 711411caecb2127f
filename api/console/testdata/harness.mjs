// What the console's browser scripts share (browser.mjs, roles.mjs,
// aggregate.mjs; the Go side is browserrig_test.go): headless Chromium on a
// fresh profile, a record of every unexpected console error, and named
// steps that each leave a screenshot in OUT_DIR and fail on such an error.
import { createRequire } from 'node:module';
import path from 'node:path';

// env is a variable the Go test must set.
export const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};

// launch opens the browser. The API answering with one of
// expectedStatuses is how the console learns what to show (Chromium logs
// each such response): those are expected on API calls, and every other
// console or page error fails the next step. failedRequests also counts a
// request that failed outright (not aborted) as an error; acceptDialogs
// accepts confirmations (a delete's).
export async function launch({ expectedStatuses, acceptDownloads = false, failedRequests = false, acceptDialogs = false }) {
  const require = createRequire(path.join(env('NPM_DIR'), 'package.json'));
  const { chromium } = require('playwright-core');
  const OUT = env('OUT_DIR');
  const expectedResource = new RegExp(`^Failed to load resource: the server responded with a status of (${expectedStatuses.join('|')}) `);
  const errors = [];
  const context = await chromium.launchPersistentContext(env('USER_DATA_DIR'), {
    executablePath: env('CHROMIUM'),
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1400, height: 900 },
    acceptDownloads,
  });
  context.setDefaultTimeout(20000);
  const page = context.pages()[0] || (await context.newPage());
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const loc = m.location();
    if (expectedResource.test(m.text()) && loc.url && new URL(loc.url).pathname.startsWith('/api/v1/')) return;
    errors.push(`console.error: ${m.text()} (${loc.url || ''})`);
  });
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  if (failedRequests) {
    page.on('requestfailed', (r) => {
      const f = r.failure();
      if (f && f.errorText !== 'net::ERR_ABORTED') errors.push(`request failed: ${r.method()} ${r.url()}: ${f.errorText}`);
    });
  }
  if (acceptDialogs) page.on('dialog', (d) => d.accept());

  let stepNo = 0;
  // step runs fn as the next numbered step and screenshots the page after it.
  async function step(name, fn) {
    stepNo++;
    const shot = path.join(OUT, `${String(stepNo).padStart(2, '0')}-${name}.png`);
    try {
      await fn();
      await page.screenshot({ path: shot, fullPage: true });
      console.log(`ok   ${stepNo} ${name}`);
    } catch (e) {
      await page.screenshot({ path: shot.replace('.png', '-FAILED.png'), fullPage: true }).catch(() => {});
      console.log(`FAIL ${stepNo} ${name}: ${e.message}`);
      throw e;
    }
    if (errors.length) throw new Error(`browser errors after step ${name}:\n${errors.join('\n')}`);
  }
  // nav follows a link of the console's header.
  const nav = (name) => page.locator('header nav').getByRole('link', { name, exact: true }).click();
  // signIn signs in on the console's start page with a key or token.
  async function signIn(key, start = '/console/') {
    await page.goto(env('DDS_URL') + start);
    if (!page.url().endsWith('/console/')) throw new Error(`GET ${start} went to ${page.url()}, want /console/`);
    await page.getByLabel('API key, access token or operator token', { exact: true }).fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('header nav').waitFor();
  }
  return { context, page, errors, step, nav, signIn, OUT };
}
