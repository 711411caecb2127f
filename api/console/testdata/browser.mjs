// Drives the DDS console in headless Chromium (see browser_test.go for the
// environment it gets). Each step leaves a screenshot in OUT_DIR; any error
// in the browser's console, or an uncaught page error, fails the run.
import path from 'node:path';
import { env, launch } from './harness.mjs';

const BASE = env('DDS_URL');

// The API answering 400/401/403/409 is how the console learns what to show
// next to a field; every other console error, and any failed request, fails
// the run.
const { context, page, errors, step, nav, signIn: signInAt, OUT } = await launch({
  expectedStatuses: [400, 401, 403, 409], acceptDownloads: true, failedRequests: true });

const expectText = (loc, text) => loc.filter({ hasText: text }).first().waitFor();
const field = (entity, n) => page.locator(`fieldset[aria-label="${entity} field ${n}"]`);

// signIn starts at / (which must send the browser to the console).
const signIn = (key) => signInAt(key, '/');

async function setField(entity, n, name, type, opts = {}) {
  const fs = field(entity, n);
  await fs.locator('input').first().fill(name);
  await fs.locator('select').first().selectOption(type);
  for (const k of ['required', 'unique', 'searchable', 'indexed', 'list']) if (opts[k]) await fs.getByRole('checkbox', { name: k }).check();
  if (opts.values) await fs.getByPlaceholder('draft, live').fill(opts.values);
  if (opts.dims) await fs.locator('input[type=number]').first().fill(String(opts.dims));
}

try {
  await step('sign-in', async () => {
    await page.goto(BASE + '/');
    await page.getByLabel('API key, access token or operator token', { exact: true }).waitFor();
    await page.getByLabel('API key, access token or operator token', { exact: true }).fill('dds_test_not-a-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'HTTP 401' }).waitFor();
    await signIn(env('DDS_KEY'));
    await page.getByRole('heading', { name: 'Schemas' }).waitFor();
  });

  await step('schema-new', async () => {
    await page.getByRole('button', { name: 'New schema' }).click();
    await page.locator('input[name=schemaName]').fill('shop');
    await page.getByLabel('Entity 1 name', { exact: true }).fill('product'); // not PascalCase: the API names the field
    await setField('product', 1, 'name', 'STRING', { required: true, searchable: true });
    await page.getByRole('button', { name: 'Create schema' }).click();
    await expectText(page.locator('.field-error'), 'PascalCase');
    await page.getByLabel('Entity 1 name', { exact: true }).fill('Product');
    const add = page.getByRole('button', { name: 'Add field' });
    await add.click();
    await setField('Product', 2, 'price', 'NUMBER', { indexed: true });
    await add.click();
    await setField('Product', 3, 'status', 'ENUM', { values: 'draft, live' });
    await add.click();
    await setField('Product', 4, 'releasedAt', 'TIMESTAMP');
    await add.click();
    await setField('Product', 5, 'tags', 'STRING', { list: true });
    await add.click();
    await setField('Product', 6, 'manual', 'FILE');
    await add.click();
    await setField('Product', 7, 'embedding', 'VECTOR', { dims: 3 });
    await page.getByRole('button', { name: 'Add entity' }).click();
    await page.getByLabel('Entity 2 name', { exact: true }).fill('Category');
    await page.getByLabel('Entity 2 soft delete', { exact: true }).check();
    await page.getByLabel('Entity 2 history', { exact: true }).check();
    await setField('Category', 1, 'title', 'STRING', { required: true, unique: true });
    await page.getByRole('button', { name: 'Add relationship' }).click();
    await page.getByLabel('Relationship 1 name', { exact: true }).fill('IN_CATEGORY');
    await page.getByLabel('Relationship 1 from', { exact: true }).selectOption('Product');
    await page.getByLabel('Relationship 1 to', { exact: true }).selectOption('Category');
    await page.getByLabel('Relationship 1 from field', { exact: true }).fill('categories');
    await page.getByLabel('Relationship 1 to field', { exact: true }).fill('products');
    await page.getByRole('button', { name: 'Add property' }).click();
    await page.locator('fieldset[aria-label="IN_CATEGORY property 1"] input').first().fill('position');
    await page.locator('fieldset[aria-label="IN_CATEGORY property 1"] select').first().selectOption('INTEGER');
    await page.getByRole('button', { name: 'Create schema' }).click();
    await page.getByRole('heading', { name: /shop/ }).waitFor();
    await page.getByText('active', { exact: true }).first().waitFor();
  });

  await step('schema-plan', async () => {
    await page.getByRole('button', { name: 'Edit' }).click();
    // Drop "tags" (destructive) and add "stock" (additive).
    await page.getByRole('button', { name: 'Remove Product field 5' }).click();
    await page.getByRole('button', { name: 'Add field' }).first().click();
    await setField('Product', 7, 'stock', 'INTEGER');
    await page.getByRole('button', { name: 'Review plan' }).click();
    const plan = page.getByLabel('Evolution plan', { exact: true });
    await expectText(plan, '1 destructive step');
    await expectText(plan, 'DESTRUCTIVE');
    if (!(await page.getByRole('button', { name: 'Apply plan' }).isDisabled())) throw new Error('a destructive plan must need consent');
    await page.screenshot({ path: path.join(OUT, 'schema-plan-destructive.png'), fullPage: true });
    await page.getByRole('checkbox', { name: /accept losing/ }).check();
    await page.getByRole('button', { name: 'Apply plan' }).click();
    await page.getByRole('heading', { name: /v2/ }).waitFor();
    await page.getByRole('cell', { name: 'stock' }).waitFor();
  });

  await step('webhook-new', async () => {
    await nav('Webhooks');
    await page.locator('input[name=targetUrl]').fill('http://127.0.0.1:9/x');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await expectText(page.locator('.field-error'), 'https');
    await page.locator('input[name=targetUrl]').fill(env('RECEIVER_URL'));
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const secret = await page.getByTestId('secret').textContent();
    if (!secret.startsWith('whsec_')) throw new Error('signing secret not shown: ' + secret);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('link', { name: env('RECEIVER_URL') }).waitFor();
  });

  await step('records-category', async () => {
    await nav('Records');
    await page.getByRole('navigation', { name: 'Entities' }).getByRole('link', { name: 'Category' }).click();
    for (const title of ['Lamps', 'Desks']) {
      await page.getByRole('button', { name: 'New Category' }).click();
      await page.locator('form[aria-label="New Category"] [name=title]').fill(title);
      await page.getByRole('button', { name: 'Create' }).click();
      await page.getByRole('button', { name: 'Save' }).waitFor();
      await page.getByRole('link', { name: '← Category' }).click();
    }
    await expectText(page.getByRole('table', { name: 'Category records' }).locator('td'), 'Desks');
  });

  await step('record-history', async () => {
    // Category keeps history and soft-deletes (ticked when the schema was made).
    await page.getByRole('button', { name: 'New Category' }).click();
    await page.locator('form[aria-label="New Category"] [name=title]').fill('Shelves');
    await page.getByRole('button', { name: 'Create' }).click();
    const form = page.locator('form[aria-label="Edit Category"]');
    await form.locator('[name=title]').fill('Bookshelves');
    await form.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    await page.getByLabel('History', { exact: true }).getByRole('button', { name: 'Show history' }).click();
    const versions = page.getByRole('table', { name: 'Versions' });
    await expectText(versions.locator('td'), 'update');
    await expectText(versions.locator('td'), 'create');
    await versions.getByRole('button', { name: 'Record' }).first().click();
    await expectText(versions.locator('pre'), 'Bookshelves');
    // A soft delete hides it from the table; its page offers Restore.
    const url = page.url();
    page.once('dialog', (d) => d.accept());
    await form.getByRole('button', { name: 'Delete' }).click();
    const table = page.getByRole('table', { name: 'Category records' });
    await expectText(table.locator('td'), 'Desks');
    if (await table.locator('td', { hasText: 'Bookshelves' }).count()) throw new Error('the deleted record is still listed');
    await page.goto(url);
    const banner = page.getByLabel('Deleted record', { exact: true });
    await banner.getByRole('button', { name: 'Restore' }).click();
    await banner.waitFor({ state: 'detached' });
    await page.getByRole('link', { name: '← Category' }).click();
    await expectText(page.getByRole('table', { name: 'Category records' }).locator('td'), 'Bookshelves');
  });

  await step('record-new', async () => {
    await page.getByRole('navigation', { name: 'Entities' }).getByRole('link', { name: 'Product' }).click();
    await page.getByRole('button', { name: 'New Product' }).click();
    const form = page.locator('form[aria-label="New Product"]');
    await form.locator('[name=price]').fill('39.5');
    await page.getByRole('button', { name: 'Create' }).click();
    await expectText(form.locator('.field-error'), 'is required'); // name, next to its field
    await form.locator('[name=name]').fill('Desk lamp');
    await form.locator('[name=status]').selectOption('live');
    await form.locator('[name=releasedAt]').fill('2026-01-15T10:30:00');
    await form.locator('[name=embedding]').fill('[0.1, 0.9, 0.2]');
    await form.locator('[name=stock]').fill('12');
    await form.getByLabel('Upload manual', { exact: true }).setInputFiles({ name: 'manual.txt', mimeType: 'text/plain', buffer: Buffer.from('Plug it in.\n') });
    await page.waitForFunction(() => document.querySelector('form[aria-label="New Product"] [name=manual]').value.length === 36);
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('button', { name: 'Save' }).waitFor();
  });

  await step('record-edges', async () => {
    const add = page.locator('form[aria-label="Add IN_CATEGORY edge"]');
    await add.getByLabel('Target Category', { exact: true }).selectOption({ label: 'Lamps' });
    await add.locator('[name=position]').fill('1');
    await add.getByRole('button', { name: 'Add IN_CATEGORY' }).click();
    const edges = page.getByLabel('IN_CATEGORY edges', { exact: true });
    await edges.getByRole('link', { name: 'Lamps' }).waitFor();
    await expectText(edges.locator('td'), '1');
    // add and remove a second edge
    await add.getByLabel('Target Category', { exact: true }).selectOption({ label: 'Desks' });
    await add.getByRole('button', { name: 'Add IN_CATEGORY' }).click();
    await edges.getByRole('link', { name: 'Desks' }).waitFor();
    await edges.getByRole('button', { name: 'Remove edge to Desks' }).click();
    await edges.getByRole('link', { name: 'Desks' }).waitFor({ state: 'detached' });
  });

  await step('record-edit', async () => {
    const form = page.locator('form[aria-label="Edit Product"]');
    await form.locator('[name=price]').fill('35');
    await form.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    await form.locator('[name=embedding]').fill('[1, 2]');
    await form.getByRole('button', { name: 'Save' }).click();
    await expectText(form.locator('.field-error'), '3'); // wrong vector length, next to the field
    await form.locator('[name=embedding]').fill('[0.1, 0.9, 0.2]');
  });

  await step('records-table', async () => {
    await page.getByRole('link', { name: '← Product' }).click();
    await page.getByRole('button', { name: 'New Product' }).click();
    const form = page.locator('form[aria-label="New Product"]');
    await form.locator('[name=name]').fill('Floor lamp');
    await form.locator('[name=price]').fill('89');
    await form.locator('[name=status]').selectOption('draft');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('button', { name: 'Save' }).waitFor();
    await page.getByRole('link', { name: '← Product' }).click();
    const table = page.getByRole('table', { name: 'Product records' });
    await expectText(table.locator('td'), 'Floor lamp');
    // filter builder: price < 50
    await page.getByRole('button', { name: 'Add condition' }).click();
    await page.getByLabel('Filter field', { exact: true }).selectOption('price');
    await page.getByLabel('Operator', { exact: true }).selectOption('$lt');
    await page.getByLabel('Filter value', { exact: true }).fill('50');
    await page.getByRole('button', { name: 'Apply filter' }).click();
    await expectText(page.getByLabel('Query DSL', { exact: true }), '{"where":{"price":{"$lt":50}}}');
    await table.locator('td', { hasText: 'Floor lamp' }).waitFor({ state: 'detached' });
    await expectText(table.locator('td'), 'Desk lamp');
    await page.getByText('1–1 of 1').waitFor();
    await page.screenshot({ path: path.join(OUT, 'records-filtered.png'), fullPage: true });
    await page.getByRole('button', { name: 'Remove condition' }).click();
    await page.getByRole('button', { name: 'Apply filter' }).click();
    await page.getByText('1–2 of 2').waitFor();
    // sort by price, descending on the second click
    await table.getByRole('button', { name: /^price/ }).click();
    await table.getByRole('button', { name: /^price/ }).click();
    await page.locator('th[aria-sort=descending]').waitFor();
    // price descending lists Floor lamp first once the page has loaded
    await table.locator('tbody tr').first().filter({ hasText: 'Floor lamp' }).waitFor();
    // full-text search
    await page.getByLabel('Full-text search', { exact: true }).fill('floor');
    await page.getByLabel('Full-text search', { exact: true }).press('Enter');
    await page.getByText('1–1 of 1').waitFor();
    await expectText(table.locator('td'), 'Floor lamp');
  });

  await step('webhook-delivery', async () => {
    await nav('Webhooks');
    await page.getByRole('link', { name: env('RECEIVER_URL') }).click();
    const deadline = Date.now() + 60000;
    const ok = page.getByRole('table', { name: 'Deliveries' }).locator('code', { hasText: 'HTTP 200' }).first();
    while (!(await ok.isVisible())) {
      if (Date.now() > deadline) throw new Error('no delivery answered HTTP 200 within a minute');
      await page.getByRole('button', { name: 'Refresh' }).click();
      await page.waitForTimeout(500);
    }
    const deliveries = page.getByRole('table', { name: 'Deliveries' });
    await expectText(deliveries.locator('td'), 'entity.created');
    // Manual retry: a second attempt shows up in the first delivery's log.
    await deliveries.getByRole('button', { name: 'Retry' }).first().click();
    const second = deliveries.locator('tbody tr').first().locator('li', { hasText: '#2' });
    for (let i = 0; !(await second.isVisible()); i++) {
      if (i === 60) throw new Error('the retried delivery shows no second attempt');
      await page.getByRole('button', { name: 'Refresh' }).click();
      await second.waitFor({ timeout: 500 }).catch(() => {});
    }
    // Toggle and edit.
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByText(/^inactive ·/).waitFor();
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByText(/^active ·/).waitFor();
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    await page.locator('form[aria-label="Edit webhook"] input[name=entityNames]').fill('Product');
    await page.locator('form[aria-label="Edit webhook"]').getByRole('button', { name: 'Save' }).click();
    await page.getByText(/entities Product ·/).waitFor();
    // Rate limit: a bad value is named next to the field; a good one is shown.
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const edit = page.locator('form[aria-label="Edit webhook"]');
    await edit.locator('input[name=rateLimit]').fill('0');
    await edit.getByRole('button', { name: 'Save' }).click();
    await expectText(edit.locator('.field-error'), '1 to 1000');
    await edit.locator('input[name=rateLimit]').fill('50');
    await edit.getByRole('button', { name: 'Save' }).click();
    await page.getByText(/rate limit 50\/s/).waitFor();
  });

  await step('webhook-replay', async () => {
    const replay = page.locator('form[aria-label="Replay deliveries"]');
    // An end before the start is refused next to the field.
    await replay.locator('input[name=until]').fill('2001-01-01T00:00:00');
    await replay.getByRole('button', { name: 'Replay' }).click();
    await expectText(replay.locator('.field-error'), 'after since');
    await replay.locator('input[name=until]').fill('');
    await replay.getByRole('checkbox', { name: 'only failed deliveries' }).uncheck();
    await replay.getByRole('button', { name: 'Replay' }).click();
    // The job's progress, polled until it completes: every delivery of the hour handed over.
    const progress = replay.getByRole('status', { name: 'Replay progress' });
    await progress.filter({ hasText: 'completed' }).waitFor({ timeout: 60000 });
    const m = (await progress.textContent()).match(/(\d+) \/ (\d+) sent/);
    if (!m || m[1] !== m[2] || Number(m[1]) < 1) throw new Error('replay progress: ' + (await progress.textContent()));
    // The retried delivery gets a third attempt (first, manual retry, replay).
    const deliveries = page.getByRole('table', { name: 'Deliveries' });
    const third = deliveries.locator('tbody tr').first().locator('li', { hasText: '#3' });
    for (let i = 0; !(await third.isVisible()); i++) {
      if (i === 60) throw new Error('the replayed delivery shows no third attempt');
      await page.getByRole('button', { name: 'Refresh' }).click();
      await third.waitFor({ timeout: 500 }).catch(() => {});
    }
  });

  await step('events', async () => {
    await nav('Events');
    const filters = page.locator('form[aria-label="Event filters"]');
    // A cursor that is not an event id is refused next to the field.
    await filters.locator('input[name=after]').fill('not-a-cursor');
    await filters.getByRole('button', { name: 'Show events' }).click();
    await expectText(filters.locator('.field-error'), 'cursor');
    await filters.locator('input[name=after]').fill('');
    await filters.locator('input[name=entities]').fill('Product');
    await filters.getByRole('checkbox', { name: 'entity.created' }).check();
    await filters.getByRole('button', { name: 'Show events' }).click();
    const table = page.getByRole('table', { name: 'Events' });
    await expectText(table.locator('td'), 'entity.created');
    const rows = table.locator('tbody tr');
    const before = await rows.count();
    for (const r of await rows.all()) {
      const t = await r.locator('td').nth(1).textContent();
      const e = await r.locator('td').nth(2).textContent();
      if (t !== 'entity.created' || e !== 'Product') throw new Error(`filtered feed shows ${t} ${e}`);
    }
    // A product created now appears with "Load more" (the feed after the last cursor shown).
    const status = await page.evaluate(async () => {
      const res = await fetch('/api/v1/dynamic/Product', {
        method: 'POST',
        headers: { Authorization: 'Bearer ' + sessionStorage.getItem('dds.credential'), 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'Event lamp', price: 12 }),
      });
      return res.status;
    });
    if (status !== 201) throw new Error('create for the events page: HTTP ' + status);
    for (let i = 0; !(await table.locator('td', { hasText: 'Event lamp' }).first().isVisible()); i++) {
      if (i === 60) throw new Error('Load more never showed the new product');
      await page.getByRole('button', { name: 'Load more' }).click();
      await page.waitForTimeout(250); // the page's answer
      await table.locator('details').evaluateAll((ds) => ds.forEach((d) => (d.open = true)));
    }
    if ((await rows.count()) !== before + 1) throw new Error(`after Load more ${await rows.count()} rows, want ${before + 1}`);
  });

  await step('events live tail', async () => {
    const table = page.getByRole('table', { name: 'Events' });
    const rows = table.locator('tbody tr');
    const status = page.getByRole('status', { name: 'Live tail' });
    const create = async (name) => {
      const st = await page.evaluate(async (name) => {
        const res = await fetch('/api/v1/dynamic/Product', {
          method: 'POST',
          headers: { Authorization: 'Bearer ' + sessionStorage.getItem('dds.credential'), 'Content-Type': 'application/json' },
          body: JSON.stringify({ name, price: 3 }),
        });
        return res.status;
      }, name);
      if (st !== 201) throw new Error(`create ${name} for the live tail: HTTP ${st}`);
    };
    const shown = (name) => table.locator('td', { hasText: name }).first();
    const before = await rows.count();
    // The tail follows on from the last event shown: a product created now
    // appears by itself, with no Load more.
    await page.getByRole('button', { name: 'Live tail', exact: true }).click();
    await expectText(status, 'Live:');
    await create('Live lamp');
    await shown('Live lamp').waitFor();
    // Paused, a new event is held, not shown; Resume shows it.
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    await create('Held lamp');
    await expectText(status, 'Paused: 1 new event held');
    if (await table.locator('td', { hasText: 'Held lamp' }).count()) throw new Error('a paused tail showed a new event');
    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    await shown('Held lamp').waitFor();
    // Stopped and started again, it resumes after the last event it had:
    // a product created meanwhile is not lost.
    await page.getByRole('button', { name: 'Stop live tail', exact: true }).click();
    await create('Gap lamp');
    await page.getByRole('button', { name: 'Live tail', exact: true }).click();
    await shown('Gap lamp').waitFor();
    await page.getByRole('button', { name: 'Stop live tail', exact: true }).click();
    // Each once, in the order written.
    await table.locator('details').evaluateAll((ds) => ds.forEach((d) => (d.open = true)));
    const names = [];
    for (const r of (await rows.all()).slice(before)) names.push(JSON.parse(await r.locator('pre').textContent()).name);
    if (names.join() !== 'Live lamp,Held lamp,Gap lamp') throw new Error(`the live tail added ${JSON.stringify(names)}`);
  });

  await step('files', async () => {
    await nav('Files');
    const table = page.getByRole('table', { name: 'Files' });
    await expectText(table.locator('td'), 'manual.txt');
    await page.getByLabel('Upload file', { exact: true }).setInputFiles({ name: 'notes.csv', mimeType: 'text/csv', buffer: Buffer.from('a,b\n1,2\n') });
    await expectText(table.locator('td'), 'notes.csv');
    const dl = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Download notes.csv' }).click();
    const file = await dl;
    if (file.suggestedFilename() !== 'notes.csv') throw new Error('download named ' + file.suggestedFilename());
    page.once('dialog', (d) => d.accept());
    await page.getByRole('button', { name: 'Delete notes.csv' }).click();
    await table.locator('td', { hasText: 'notes.csv' }).waitFor({ state: 'detached' });
  });

  await step('jobs', async () => {
    await nav('Jobs');
    const form = page.locator('form[aria-label="New job"]');
    await form.locator('[name=jobType]').selectOption('update');
    // The entity field is a free-text input until the schema has loaded, then a select.
    await form.locator('select[name=jobEntity]').selectOption('Product');
    await form.locator('[name=jobWhere]').fill('{"status": "draft"}');
    await form.locator('[name=jobSet]').fill('{"price": "cheap"}');
    await form.getByRole('button', { name: 'Start job' }).click();
    await expectText(form.getByRole('alert'), 'price'); // refused before a job exists
    await form.locator('[name=jobSet]').fill('{"price": 10}');
    await form.getByRole('button', { name: 'Start job' }).click();
    const jobs = page.getByRole('table', { name: 'Jobs' });
    // The list polls while the job runs: it ends succeeded with the one draft product written.
    await jobs.locator('tbody tr').first().filter({ hasText: 'succeeded' }).waitFor({ timeout: 60000 });
    await expectText(jobs.locator('td'), '1 written, 0 failed');
  });

  let narrowKey;
  await step('keys', async () => {
    await nav('API keys');
    await page.locator('input[name=keyName]').fill('storefront');
    await page.getByLabel('Scope kind', { exact: true }).selectOption('entity');
    await page.getByLabel('Scope name', { exact: true }).selectOption('Product');
    await page.getByLabel('Scope operation', { exact: true }).selectOption('read');
    await page.getByRole('button', { name: 'Add scope' }).click();
    await page.getByRole('button', { name: 'Create key' }).click();
    narrowKey = (await page.getByTestId('secret').textContent()).trim();
    if (!narrowKey.startsWith('dds_')) throw new Error('key not shown: ' + narrowKey);
    await expectText(page.locator('td'), 'entity:Product:read');
  });

  await step('graphiql', async () => {
    await nav('GraphQL');
    const editor = page.locator('.graphiql-query-editor .CodeMirror');
    await editor.waitFor();
    await page.evaluate(() => document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror.setValue('{ products(orderBy: [{field: "price", direction: ASC}]) { name price categories { title } } }'));
    await page.locator('.graphiql-execute-button').click();
    await expectText(page.locator('.graphiql-response'), 'Desk lamp');
    await expectText(page.locator('.graphiql-response'), 'Lamps');
    // A subscription over graphql-ws: records created now arrive in the response pane.
    await page.evaluate(() => document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror.setValue('subscription LiveLamps { productCreated { name } }'));
    await page.locator('.graphiql-tab', { hasText: 'LiveLamps' }).waitFor(); // the editor has parsed it
    await page.locator('.graphiql-execute-button').click();
    const live = page.locator('.graphiql-response', { hasText: 'Live lamp' });
    for (let i = 0; !(await live.isVisible()); i++) {
      if (i === 20) throw new Error('no subscription event arrived');
      await page.evaluate(async (n) => {
        const res = await fetch('/api/v1/dynamic/Product', {
          method: 'POST',
          headers: { Authorization: 'Bearer ' + sessionStorage.getItem('dds.credential'), 'Content-Type': 'application/json' },
          body: JSON.stringify({ name: 'Live lamp ' + n }),
        });
        if (!res.ok) throw new Error('create: HTTP ' + res.status);
      }, i);
      await live.waitFor({ timeout: 1000 }).catch(() => {});
    }
    await page.locator('.graphiql-execute-button').click(); // stop it
  });

  await step('narrow-key-403', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(narrowKey);
    const nav = await page.locator('header nav').textContent();
    for (const hidden of ['Schemas', 'API keys', 'Webhooks', 'Files', 'Jobs']) if (nav.includes(hidden)) throw new Error(`a Product reader sees ${hidden}: ${nav}`);
    await page.getByRole('navigation', { name: 'Entities' }).getByRole('link', { name: 'Product' }).waitFor();
    if (await page.getByRole('button', { name: 'New Product' }).count()) throw new Error('a reader must not be offered New Product');
    await page.goto(BASE + '/console/records/Category');
    await page.getByRole('alert').filter({ hasText: 'HTTP 403' }).waitFor();
    await expectText(page.getByRole('alert'), 'entity:Category:read');
  });

  await step('key-revoke', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(env('DDS_KEY'));
    await nav('API keys');
    page.once('dialog', (d) => d.accept());
    await page.getByRole('button', { name: 'Revoke storefront' }).click();
    await page.getByRole('button', { name: 'Revoke storefront' }).waitFor({ state: 'detached' });
    // The revoked key no longer signs in.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key, access token or operator token', { exact: true }).fill(narrowKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'HTTP 401' }).waitFor();
  });

  // The operator: only the tenants screen; export a tenant, download the
  // archive, import it as a new tenant, and delete that one.
  let archivePath;
  await step('tenants-export', async () => {
    await signIn(env('DDS_OPERATOR')); // signed out by the revoked key's refusal
    const shown = await page.locator('header nav').textContent();
    if (shown.trim() !== 'Tenants') throw new Error(`the operator sees ${shown}`);
    await page.getByRole('table', { name: 'Tenants' }).getByRole('link').first().waitFor();
    // This database holds the tenants of earlier runs too: open this run's.
    await page.goto(BASE + '/console/tenants/' + env('DDS_TENANT'));
    await expectText(page.locator('dd'), env('DDS_TENANT'));
    if ((await page.getByTestId('count-schemas').textContent()) === '0') throw new Error('the tenant shows no schema');
    await page.getByRole('button', { name: 'Export', exact: true }).click();
    const link = page.getByRole('link', { name: 'Download the archive' });
    await link.waitFor({ timeout: 60000 });
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    archivePath = path.join(OUT, 'tenant-archive.zip');
    await download.saveAs(archivePath);
    const { readFileSync } = await import('node:fs');
    if (readFileSync(archivePath).subarray(0, 2).toString() !== 'PK') throw new Error('the downloaded archive is not a zip');
  });

  // An archive's files keep their ids, so it imports here only once the
  // exported tenant is gone: delete it (after typing its name), then import.
  await step('tenants-delete', async () => {
    if (!(await page.getByRole('button', { name: 'Delete tenant' }).isDisabled())) throw new Error('Delete tenant is enabled before the name is typed');
    await page.getByLabel('Tenant name to confirm').fill('console-browser');
    await page.getByRole('button', { name: 'Delete tenant' }).click();
    await page.getByText('The tenant is deleted.').waitFor({ timeout: 60000 });
    const res = await page.evaluate(async (k) => (await fetch('/api/v1/schemas', { headers: { Authorization: 'Bearer ' + k } })).status, env('DDS_KEY'));
    if (res !== 401) throw new Error(`the deleted tenant's key answers ${res}`);
  });

  await step('tenants-import', async () => {
    await page.getByRole('link', { name: 'Tenants', exact: true }).first().click();
    await page.getByText('Import a tenant archive').click();
    await page.getByLabel('Tenant archive').setInputFiles(archivePath);
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await page.getByTestId('secret').waitFor({ timeout: 60000 });
    const key = (await page.getByTestId('secret').textContent()).trim();
    if (!key.startsWith('dds_') || key === env('DDS_KEY')) throw new Error(`the imported tenant's key is ${key}`);
    const res = await page.evaluate(async (k) => (await fetch('/api/v1/schemas', { headers: { Authorization: 'Bearer ' + k } })).status, key);
    if (res !== 200) throw new Error(`the imported tenant's key answers ${res}`);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('button', { name: 'Open the imported tenant' }).click();
    await page.getByRole('button', { name: 'Delete tenant' }).waitFor();
    if ((await page.getByTestId('count-schemas').textContent()) === '0') throw new Error('the imported tenant shows no schema');
  });
} finally {
  await context.close();
}
if (errors.length) {
  console.error(errors.join('\n'));
  process.exit(1);
}
console.log('console browser test passed');
