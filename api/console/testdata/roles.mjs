// Drives the console's Roles screen and "view as user" in headless Chromium
// (see roles_browser_test.go for the environment and the data it sets up:
// a Todo entity with alice-1, alice-2 and bob-1). Each step leaves a
// screenshot in OUT_DIR; any unexpected browser console error fails the run.
import { env, launch } from './harness.mjs';

const BASE = env('DDS_URL');

// The API's 400 (the bad rule), 403 (the narrow key) and 401 (the ended
// view's token) are expected.
const { context, page, step, nav, signIn } = await launch({ expectedStatuses: [400, 401, 403], acceptDialogs: true });
const todoTable = () => page.getByRole('table', { name: 'Todo records' });

// expectTitles waits until the Todo table lists exactly these titles.
async function expectTitles(want) {
  await page.waitForFunction(
    (want) => {
      const t = document.querySelector('table[aria-label="Todo records"]');
      if (!t) return false;
      const got = [...t.querySelectorAll('tbody td')].map((td) => td.textContent).filter((s) => /^(alice|bob)-\d$/.test(s));
      return got.sort().join(',') === want.join(',');
    },
    want,
    { timeout: 20000 },
  );
}

const role = (read) =>
  JSON.stringify({ scopes: ['entity:Todo:*'], rules: { Todo: { read, create: { preset: { ownerId: '$user.id' } }, update: { where: { ownerId: '$user.id' }, check: { ownerId: '$user.id' } }, delete: { ownerId: '$user.id' } } } }, null, 2);

try {
  await step('roles-empty', async () => {
    await signIn(env('DDS_KEY'));
    await nav('Roles');
    await page.getByRole('heading', { name: 'Roles' }).waitFor();
    await page.getByText('No roles yet.').waitFor();
  });

  await step('role-skeleton', async () => {
    await page.getByRole('button', { name: 'New role' }).click();
    await page.locator('input[name=roleName]').fill('member');
    // The schema reference lists the entity and its fields, and inserts a rule skeleton.
    const ref = page.getByRole('complementary', { name: 'Schema reference' });
    await ref.getByText('ownerId', { exact: true }).waitFor();
    await ref.getByRole('button', { name: 'Insert rules for Todo' }).click();
    const { scopes, rules } = JSON.parse(await page.locator('textarea[name=roleJSON]').inputValue());
    if (scopes.join(',') !== 'entity:Todo:*') throw new Error(`skeleton scopes: ${scopes}`);
    for (const k of ['read', 'create', 'update', 'delete']) if (!(k in rules.Todo)) throw new Error(`skeleton lacks ${k}: ${JSON.stringify(rules)}`);
    if (!('check' in rules.Todo.create) || !('preset' in rules.Todo.create) || !('where' in rules.Todo.update)) throw new Error(`skeleton: ${JSON.stringify(rules)}`);
    // The skeleton as inserted is a role the API accepts (its empty conditions restrict nothing).
    await page.getByRole('button', { name: 'Save role' }).click();
    await page.getByRole('heading', { name: 'Role member' }).waitFor();
    await page.getByText('version 1', { exact: true }).waitFor();
  });

  await step('role-bad-rule', async () => {
    // "owner" is no field of Todo: the API's 400 names rules.Todo.read.owner,
    // shown with the line it points at in the editor.
    await page.locator('textarea[name=roleJSON]').fill(role({ owner: '$user.id' }));
    await page.getByRole('button', { name: 'Save role' }).click();
    const err = page.getByRole('list', { name: 'Rule errors' }).getByRole('alert').filter({ hasText: 'rules.Todo.read.owner' });
    await err.waitFor();
    const text = await err.textContent();
    if (!/line \d+/.test(text)) throw new Error(`the error does not point at a line: ${text}`);
    await err.getByRole('button').click(); // selects the line naming "owner"
    const sel = await page.locator('textarea[name=roleJSON]').evaluate((el) => el.value.slice(el.selectionStart, el.selectionEnd));
    if (!sel.includes('"owner"')) throw new Error(`the editor selected ${JSON.stringify(sel)}, want the "owner" line`);
  });

  await step('role-saved', async () => {
    await page.locator('textarea[name=roleJSON]').fill(role({ ownerId: '$user.id' }));
    await page.getByRole('button', { name: 'Save role' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved: version 2.' }).waitFor();
    await page.getByRole('link', { name: '← Roles' }).click();
    await page.getByRole('table', { name: 'Roles' }).getByRole('link', { name: 'member' }).waitFor();
  });

  await step('records-all', async () => {
    await nav('Records');
    await expectTitles(['alice-1', 'alice-2', 'bob-1']);
  });

  await step('view-as-alice', async () => {
    await nav('Roles');
    const form = page.getByRole('form', { name: 'View as user' });
    await form.getByRole('checkbox', { name: 'member' }).check();
    await form.locator('input[name=viewAsUser]').fill('alice');
    await form.getByRole('button', { name: 'View as user' }).click();
    const banner = page.getByRole('status', { name: 'Viewing as' });
    await banner.filter({ hasText: 'Viewing as alice (member)' }).waitFor();
    await expectTitles(['alice-1', 'alice-2']);
    // Only Records while viewing as a user.
    const links = await page.locator('header nav a').allTextContents();
    if (links.join(',') !== 'Records') throw new Error(`screens while viewing as alice: ${links}`);
    // The token is in the tab's memory only.
    const stored = await page.evaluate(() => JSON.stringify({ ...sessionStorage }) + JSON.stringify({ ...localStorage }));
    if (/eyJ/.test(stored)) throw new Error(`a token was stored: ${stored}`);
  });

  await step('view-as-bob', async () => {
    await page.getByRole('button', { name: 'Leave view' }).click();
    await page.getByRole('heading', { name: 'Roles' }).waitFor();
    const form = page.getByRole('form', { name: 'View as user' });
    await form.getByRole('checkbox', { name: 'member' }).check();
    await form.locator('input[name=viewAsUser]').fill('bob');
    await form.getByRole('button', { name: 'View as user' }).click();
    await page.getByRole('status', { name: 'Viewing as' }).filter({ hasText: 'Viewing as bob (member)' }).waitFor();
    await expectTitles(['bob-1']);
  });

  await step('left-view', async () => {
    await page.getByRole('button', { name: 'Leave view' }).click();
    await page.getByRole('heading', { name: 'Roles' }).waitFor();
    if (await page.getByRole('status', { name: 'Viewing as' }).count()) throw new Error('the banner is still shown');
    await nav('Records');
    await expectTitles(['alice-1', 'alice-2', 'bob-1']);
  });

  await step('view-ended', async () => {
    // A role only this view uses: once it is deleted the API refuses the
    // view's token with 401, as it does an expired one, and the console
    // ends the view instead of showing the 401.
    const call = async (method, p, body) => {
      const res = await fetch(BASE + '/api/v1' + p, {
        method,
        headers: body ? { Authorization: 'Bearer ' + env('DDS_KEY'), 'Content-Type': 'application/json' } : { Authorization: 'Bearer ' + env('DDS_KEY') },
        body: body ? JSON.stringify(body) : undefined,
      });
      if (res.status >= 300) console.log(method, p, res.status, await res.text());
      return res.status;
    };
    const put = await call('PUT', '/roles/ephemeral', { scopes: ['entity:Todo:read'], rules: { Todo: { read: { ownerId: '$user.id' } } } });
    if (put !== 201) throw new Error(`PUT /roles/ephemeral: ${put}`);
    await nav('Roles');
    const form = page.getByRole('form', { name: 'View as user' });
    await form.getByRole('checkbox', { name: 'ephemeral' }).check();
    await form.locator('input[name=viewAsUser]').fill('bob');
    await form.getByRole('button', { name: 'View as user' }).click();
    await page.getByRole('status', { name: 'Viewing as' }).filter({ hasText: 'Viewing as bob (ephemeral)' }).waitFor();
    await expectTitles(['bob-1']);
    const del = await call('DELETE', '/roles/ephemeral');
    if (del !== 204) throw new Error(`DELETE /roles/ephemeral: ${del}`);
    // Sorting the list is the next call the view makes.
    await page.getByRole('table', { name: 'Todo records' }).getByRole('button', { name: 'id' }).click();
    await page.getByRole('status', { name: 'View ended' }).filter({ hasText: 'The view as bob ended' }).waitFor();
    await page.getByRole('heading', { name: 'Roles' }).waitFor();
    if (await page.getByRole('status', { name: 'Viewing as' }).count()) throw new Error('the banner is still shown after the view ended');
    if (await page.getByText('HTTP 401').count()) throw new Error('the ended view showed a 401');
    await nav('Records');
    await expectTitles(['alice-1', 'alice-2', 'bob-1']);
  });

  await step('narrow-key-403', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(env('DDS_NARROW_KEY'));
    await nav('Roles');
    const form = page.getByRole('form', { name: 'View as user' });
    await form.getByText('lack user:*:create').waitFor();
    await form.getByRole('checkbox', { name: 'member' }).check();
    await form.locator('input[name=viewAsUser]').fill('alice');
    await form.getByRole('button', { name: 'View as user' }).click();
    await form.getByRole('alert').filter({ hasText: 'HTTP 403' }).filter({ hasText: 'user:*:create' }).waitFor();
    if (await page.getByRole('status', { name: 'Viewing as' }).count()) throw new Error('a refused mint still opened the view');
    if (await page.getByRole('button', { name: 'Delete role member' }).count()) throw new Error('a key without role:*:delete sees Delete');
  });

  await step('role-deleted', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(env('DDS_KEY'));
    await nav('Roles');
    await page.getByRole('button', { name: 'Delete role member' }).click();
    await page.getByText('No roles yet.').waitFor();
  });
} finally {
  await context.close();
}
