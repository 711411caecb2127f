// Drives the records page's Aggregate view in headless Chromium (see
// aggregate_browser_test.go for the environment and the products it seeds:
// live 10, 20, 30; draft 5, 15; archived 100, by price). Each step leaves a
// screenshot in OUT_DIR; any unexpected browser console error fails the run.
import { env, launch } from './harness.mjs';

const BASE = env('DDS_URL');

// The API's 400s (a sum over JSON, a having on an unknown alias) are expected.
const { context, page, step, nav, signIn } = await launch({ expectedStatuses: [400] });
const view = () => page.getByRole('form', { name: 'Aggregate Product' });

// expectResult waits until the result table shows exactly these rows (cell
// texts, in order) under these headers.
async function expectResult(headers, rows) {
  const want = JSON.stringify({ headers, rows });
  try {
    await page.waitForFunction(
      (want) => {
        const t = document.querySelector('table[aria-label="Aggregate result"]');
        if (!t) return false;
        const headers = [...t.querySelectorAll('thead th')].map((th) => th.textContent);
        const rows = [...t.querySelectorAll('tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent));
        return JSON.stringify({ headers, rows }) === want;
      },
      want,
      { timeout: 15000 },
    );
  } catch (e) {
    const got = await page.evaluate(() => {
      const t = document.querySelector('table[aria-label="Aggregate result"]');
      return t ? t.innerText : 'no result table';
    });
    throw new Error(`want ${want}, the page shows:\n${got}`);
  }
}

async function addAggregate(i, fn, field) {
  await view().getByRole('button', { name: 'Add aggregate' }).click();
  await view().getByLabel(`Function ${i}`, { exact: true }).selectOption(fn);
  await view().getByLabel(`Aggregate field ${i}`, { exact: true }).fill(field);
}

const run = () => view().getByRole('button', { name: 'Run aggregate' }).click();

// graphqlGroups runs the GraphQL form the view shows (outside the browser,
// with the same key) and returns its groups as rows of cell texts: the
// key, then count and each function's fields in the order given.
async function graphqlGroups(cols) {
  const q = await view().getByLabel('GraphQL aggregate query', { exact: true }).textContent();
  const res = await fetch(`${BASE}/api/v1/dynamic-gql/${env('DDS_TENANT')}`, {
    method: 'POST',
    headers: { Authorization: 'Bearer ' + env('DDS_KEY'), 'Content-Type': 'application/json' },
    body: JSON.stringify({ query: q }),
  });
  const out = await res.json();
  if (!res.ok || out.errors) throw new Error(`the GraphQL form ${q} answered ${JSON.stringify(out)}`);
  return { q, rows: out.data.productsAggregate.groups.map((g) => cols.map((c) => String(c.split('.').reduce((v, k) => v[k], g)))) };
}

try {
  await step('open-aggregate', async () => {
    await signIn(env('DDS_KEY'));
    await nav('Records');
    await page.getByRole('table', { name: 'Product records' }).waitFor();
    await page.getByRole('group', { name: 'View' }).getByRole('button', { name: 'Aggregate' }).click();
    await view().waitFor();
    // The default: one group, every record counted.
    await run();
    await expectResult(['count'], [['6']]);
  });

  await step('group-by-status', async () => {
    await view().getByRole('button', { name: 'Add group key' }).click();
    await view().getByLabel('Group by field 1', { exact: true }).fill('status');
    // A new aggregate is count of * named count2; make it sum of price and
    // rename it, and let the third keep its automatic alias (avgPrice).
    await addAggregate(2, 'sum', 'price');
    await view().getByLabel('Alias 2', { exact: true }).fill('total');
    await addAggregate(3, 'avg', 'price');
    if ((await view().getByLabel('Alias 3', { exact: true }).inputValue()) !== 'avgPrice') throw new Error('the automatic alias of avg(price) is not avgPrice');
    await run();
    // Groups in the keys' order (an ENUM's value is its text).
    await expectResult(
      ['status', 'count', 'total', 'avgPrice'],
      [
        ['archived', '1', '100', '100'],
        ['draft', '2', '20', '10'],
        ['live', '3', '60', '20'],
      ],
    );
    // The request to copy is the one that ran.
    const req = await view().getByLabel('Aggregate request', { exact: true }).textContent();
    const body = JSON.parse(req.slice(req.indexOf('\n') + 1));
    if (!req.startsWith('POST /api/v1/dynamic/Product/aggregate') || body.groupBy[0] !== 'status' || body.aggregates.total.sum !== 'price')
      throw new Error(`request shown: ${req}`);
    // And its GraphQL form answers the same groups.
    const { q, rows } = await graphqlGroups(['key.status', 'count', 'sum.price', 'avg.price']);
    const want = [['archived', '1', '100', '100'], ['draft', '2', '20', '10'], ['live', '3', '60', '20']];
    if (JSON.stringify(rows) !== JSON.stringify(want)) throw new Error(`GraphQL ${q} answered ${JSON.stringify(rows)}`);
  });

  await step('having-and-order', async () => {
    await view().getByRole('button', { name: 'Add having condition' }).click();
    await view().getByLabel('Having alias 1', { exact: true }).fill('count');
    await view().getByLabel('Having operator 1', { exact: true }).selectOption('$gte');
    await view().getByLabel('Having value 1', { exact: true }).fill('2');
    await view().getByLabel('Order groups by', { exact: true }).selectOption('total');
    await view().getByLabel('Order direction', { exact: true }).selectOption('DESC');
    await run();
    await expectResult(
      ['status', 'count', 'total', 'avgPrice'],
      [
        ['live', '3', '60', '20'],
        ['draft', '2', '20', '10'],
      ],
    );
  });

  await step('filtered', async () => {
    // The records view's filter is the aggregate's where: price >= 15 leaves
    // live 20, 30 and draft 15; having count >= 2 keeps live only.
    const filter = page.getByRole('form', { name: 'Filter' });
    await filter.getByRole('button', { name: 'Add condition' }).click();
    await filter.getByLabel('Filter field', { exact: true }).selectOption('price');
    await filter.getByLabel('Operator', { exact: true }).selectOption('$gte');
    await filter.getByLabel('Filter value', { exact: true }).fill('15');
    await filter.getByRole('button', { name: 'Apply filter' }).click();
    await view().getByText('Over the records the filter above matches.').waitFor();
    await run();
    await expectResult(['status', 'count', 'total', 'avgPrice'], [['live', '2', '50', '25']]);
    // The GraphQL form carries the where, the having and the order.
    const { q, rows } = await graphqlGroups(['key.status', 'count', 'sum.price', 'avg.price']);
    if (JSON.stringify(rows) !== JSON.stringify([['live', '2', '50', '25']]) || !q.includes('where: {price: {gte: 15}}') || !q.includes('having: {count: {gte: 2}}') || !q.includes('"sum.price", direction: DESC'))
      throw new Error(`GraphQL ${q} answered ${JSON.stringify(rows)}`);
  });

  await step('error-not-aggregatable', async () => {
    // A sum over a JSON field: the API's 400 names aggregates.sumMeta.sum,
    // shown beside that row; the last result is gone.
    await addAggregate(4, 'sum', 'meta');
    if ((await view().getByLabel('Alias 4', { exact: true }).inputValue()) !== 'sumMeta') throw new Error('alias of sum(meta)');
    await run();
    await view().locator('.agg-row', { has: page.getByLabel('Alias 4', { exact: true }) }).getByRole('alert').filter({ hasText: 'aggregates.sumMeta.sum' }).waitFor();
    if (await page.getByRole('table', { name: 'Aggregate result' }).count()) throw new Error('a refused aggregate left a result shown');
    await view().getByRole('button', { name: 'Remove aggregate 4' }).click();
  });

  await step('error-unknown-alias', async () => {
    await view().getByLabel('Having alias 1', { exact: true }).fill('nope');
    await run();
    await view().locator('.agg-row', { has: page.getByLabel('Having alias 1', { exact: true }) }).getByRole('alert').filter({ hasText: 'having.nope' }).waitFor();
    await view().getByLabel('Having alias 1', { exact: true }).fill('count');
    await run();
    await expectResult(['status', 'count', 'total', 'avgPrice'], [['live', '2', '50', '25']]);
  });

  await step('bucketed', async () => {
    // Without the filter and the having, by the month of createdAt: all six
    // were created just now, so one group.
    await page.getByRole('form', { name: 'Filter' }).getByRole('button', { name: 'Remove condition' }).click();
    await page.getByRole('form', { name: 'Filter' }).getByRole('button', { name: 'Apply filter' }).click();
    await view().getByRole('button', { name: 'Remove having 1' }).click();
    await view().getByLabel('Order groups by', { exact: true }).selectOption('');
    await view().getByLabel('Group by field 1', { exact: true }).fill('createdAt');
    await view().getByLabel('Bucket 1', { exact: true }).selectOption('month');
    await run();
    await page.waitForFunction(() => {
      const t = document.querySelector('table[aria-label="Aggregate result"]');
      if (!t) return false;
      const h = [...t.querySelectorAll('thead th')].map((th) => th.textContent).join(',');
      const cells = [...t.querySelectorAll('tbody td')].map((td) => td.textContent);
      return h === 'createdAt (month),count,total,avgPrice' && cells.length === 4 && cells.slice(1).join(',') === '6,180,30';
    });
  });
} finally {
  await context.close();
}
