// Roles: the tenant's end-user roles (scopes, row rules, field lists) edited
// as JSON beside the active schema's entities and fields, saved with
// PUT /roles/{name} (the API's 400s shown at the JSON path they name); and
// "view as user": mint a short-lived user token for a role set and a user id,
// then browse Records with it.
import { useMemo, useRef, useState } from 'react';
import { allows, api, ApiError, enc, identify } from './api.js';
import { loadActive } from './schemas.jsx';
import { ErrorBox, fmtTime, Link, ListTable, navigate, Row, useAction, useLoad } from './ui.jsx';

// View-as tokens live 15 minutes: long enough to look around, short
// enough that a forgotten tab holds nothing lasting.
const VIEW_AS_SECONDS = 900;

export function Roles({ me, rest, onViewAs }) {
  if (rest === 'new') return <RoleEditor me={me} name={null} />;
  if (rest) return <RoleEditor key={rest} me={me} name={decodeURIComponent(rest)} />;
  return <RoleList me={me} onViewAs={onViewAs} />;
}

function RoleList({ me, onViewAs }) {
  const { data, error, reload } = useLoad((signal) => api.get('/roles', { signal }), []);
  const [actError, act] = useAction();
  const canWrite = allows(me.scopes, 'role', '*', 'create') && allows(me.scopes, 'role', '*', 'update');
  return (
    <section>
      <div className="toolbar">
        <h1>Roles</h1>
        {canWrite ? (
          <button type="button" onClick={() => navigate('/roles/new')}>
            New role
          </button>
        ) : null}
      </div>
      <ErrorBox error={error || actError} />
      <ListTable label="Roles" items={data && data.roles} empty="No roles yet." head={['Name', 'Version', 'Scopes', 'Rules on', 'Updated', '']}>
        {(r) => (
          <tr key={r.name}>
            <td>
              <Link to={'/roles/' + enc(r.name)}>{r.name}</Link>
            </td>
            <td>{r.version}</td>
            <td>{(r.scopes || []).join(', ')}</td>
            <td>{Object.keys(r.rules || {}).join(', ') || '—'}</td>
            <td>{fmtTime(r.updatedAt)}</td>
            <td>
              {allows(me.scopes, 'role', '*', 'delete') ? (
                <button
                  type="button"
                  className="small danger"
                  aria-label={`Delete role ${r.name}`}
                  onClick={() =>
                    window.confirm(`Delete role “${r.name}”? Users holding it lose what it grants at once.`) &&
                    act(async () => {
                      await api.del('/roles/' + enc(r.name));
                      reload();
                    })
                  }
                >
                  Delete
                </button>
              ) : null}
            </td>
          </tr>
        )}
      </ListTable>
      {data && data.roles.length ? <ViewAs me={me} roles={data.roles} onViewAs={onViewAs} /> : null}
    </section>
  );
}

// ViewAs mints a user token with the console's credential (which needs
// user:*:create) and hands it to the shell, which keeps it in memory only.
function ViewAs({ me, roles, onViewAs }) {
  const [picked, setPicked] = useState([]);
  const [userId, setUserId] = useState('');
  const [claims, setClaims] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const errs = error instanceof ApiError ? error.fieldErrors() : {};
  const canMint = allows(me.scopes, 'user', '*', 'create');
  async function submit(e) {
    e.preventDefault();
    setError(null);
    let parsed;
    if (claims.trim()) {
      try {
        parsed = JSON.parse(claims);
      } catch (x) {
        setError(new ApiError(400, { error: { code: 'VALIDATION_ERROR', message: 'claims: not JSON: ' + x.message, details: [{ field: 'claims', message: 'not JSON: ' + x.message }] } }));
        return;
      }
    }
    setBusy(true);
    try {
      const body = { userId: userId.trim(), roles: picked, expiresIn: VIEW_AS_SECONDS };
      if (parsed !== undefined) body.claims = parsed;
      const tok = await api.post('/auth/token', body);
      const who = await identify(tok.accessToken);
      // The entity names come from the console's own schema read: a role
      // with entity:*:read names none in its scopes.
      const def = allows(me.scopes, 'schema', '*', 'read') ? await loadActive().catch(() => null) : null;
      const entityNames = def ? def.entities.map((x) => x.name) : undefined;
      onViewAs({ token: tok.accessToken, me: who, userId: tok.userId, roles: tok.roles, expiresAt: tok.expiresAt, entityNames });
    } catch (x) {
      setError(x);
    } finally {
      setBusy(false);
    }
  }
  return (
    <form className="card" aria-label="View as user" onSubmit={submit}>
      <h2>View as user</h2>
      <p className="hint">
        Mints a {VIEW_AS_SECONDS / 60}-minute user token with this console&apos;s credential (<code>POST /auth/token</code>, which needs{' '}
        <code>user:*:create</code>) and opens Records with it, seeing what that user sees. The token stays in this tab&apos;s memory only.
      </p>
      {!canMint ? (
        <p className="field-error">
          This credential&apos;s scopes lack <code>user:*:create</code>: the API will refuse to mint the token.
        </p>
      ) : null}
      <fieldset className="chips" aria-label="Roles to view as">
        {roles.map((r) => (
          <label key={r.name}>
            <input
              type="checkbox"
              checked={picked.includes(r.name)}
              onChange={(e) => setPicked((p) => (e.target.checked ? [...p, r.name] : p.filter((x) => x !== r.name)))}
            />{' '}
            {r.name}
          </label>
        ))}
      </fieldset>
      {Object.entries(errs)
        .filter(([k]) => k.startsWith('roles'))
        .map(([k, m]) => (
          <span key={k} className="field-error" role="alert">
            {k}: {m}
          </span>
        ))}
      <Row label="User id" error={errs.userId}>
        <input name="viewAsUser" value={userId} onChange={(e) => setUserId(e.target.value)} required />
      </Row>
      <Row label="Claims (JSON object, optional)" error={errs.claims}>
        <textarea name="viewAsClaims" rows={2} value={claims} onChange={(e) => setClaims(e.target.value)} placeholder='{"org": "acme"}' />
      </Row>
      <ErrorBox error={error} hideFields />
      {error instanceof ApiError && error.status === 403 ? (
        <p className="field-error" role="alert">
          The console&apos;s credential may not mint user tokens or grant these roles: sign in with a key holding <code>user:*:create</code> and the roles&apos; scopes.
        </p>
      ) : null}
      <button type="submit" disabled={busy || !userId.trim() || picked.length === 0}>
        View as user
      </button>
    </form>
  );
}

const ruleSkeleton = () => ({
  read: {},
  create: { check: {}, preset: {} },
  update: { where: {}, check: {} },
  delete: {},
});

function RoleEditor({ me, name: existing }) {
  const { data: role, error: loadError } = useLoad((signal) => (existing ? api.get('/roles/' + enc(existing), { signal }) : Promise.resolve(null)), [existing]);
  const canSchema = allows(me.scopes, 'schema', '*', 'read');
  const { data: def } = useLoad((signal) => (canSchema ? loadActive(signal).catch(() => null) : Promise.resolve(null)), [canSchema]);
  if (loadError) return <ErrorBox error={loadError} />;
  if (existing && !role) return <p>Loading…</p>;
  return <RoleForm key={existing || 'new'} me={me} existing={existing} role={role} def={def} />;
}

function RoleForm({ me, existing, role, def }) {
  const [name, setName] = useState(existing || '');
  const [text, setText] = useState(() =>
    JSON.stringify(role ? { scopes: role.scopes || [], rules: role.rules || {}, fields: role.fields || {} } : { scopes: [], rules: {}, fields: {} }, null, 2),
  );
  const [error, setError] = useState(null);
  const [saved, setSaved] = useState(null);
  const [busy, setBusy] = useState(false);
  const area = useRef(null);
  const canWrite = allows(me.scopes, 'role', '*', 'create') && allows(me.scopes, 'role', '*', 'update');
  const parsed = useMemo(() => {
    try {
      const v = JSON.parse(text);
      return v && typeof v === 'object' && !Array.isArray(v) ? { value: v } : { error: 'the role must be a JSON object' };
    } catch (x) {
      return { error: x.message };
    }
  }, [text]);
  const positions = useMemo(() => (parsed.value ? jsonPositions(text) : {}), [text, parsed]);
  const details = error instanceof ApiError ? error.details.filter((d) => d.field) : [];

  function insertSkeleton(entity) {
    if (!parsed.value) return;
    const v = parsed.value;
    const rules = { ...(v.rules || {}) };
    if (!rules[entity]) rules[entity] = ruleSkeleton();
    // Rules on an entity the role's scopes do not reach would rule nothing.
    let scopes = Array.isArray(v.scopes) ? v.scopes : [];
    if (!scopes.some((x) => typeof x === 'string' && allows([x], 'entity', entity, 'read'))) scopes = [...scopes, `entity:${entity}:*`];
    setText(JSON.stringify({ ...v, scopes, rules }, null, 2));
  }
  function jump(offset) {
    const el = area.current;
    if (!el || offset === undefined) return;
    el.focus();
    const end = text.indexOf('\n', offset);
    el.setSelectionRange(offset, end < 0 ? text.length : end);
  }
  async function save(e) {
    e.preventDefault();
    if (!parsed.value) return;
    setBusy(true);
    setError(null);
    setSaved(null);
    try {
      const r = await api.put('/roles/' + enc(name.trim()), parsed.value);
      setSaved(r);
      if (!existing) navigate('/roles/' + enc(r.name));
    } catch (x) {
      setError(x);
    } finally {
      setBusy(false);
    }
  }
  return (
    <section>
      <p>
        <Link to="/roles">← Roles</Link>
      </p>
      <div className="toolbar">
        <h1>{existing ? `Role ${existing}` : 'New role'}</h1>
        {role ? <small>version {role.version}</small> : null}
      </div>
      <div className="role-editor">
        <form aria-label="Role" onSubmit={save}>
          {existing ? null : (
            <Row label="Name" error={details.find((d) => d.field === 'name')?.message}>
              <input name="roleName" value={name} onChange={(e) => setName(e.target.value)} required />
            </Row>
          )}
          <label className={'row' + (details.length || parsed.error ? ' invalid' : '')}>
            <span className="label">Role (JSON: scopes, rules, fields)</span>
            <textarea
              ref={area}
              name="roleJSON"
              className="mono"
              rows={24}
              spellCheck={false}
              value={text}
              onChange={(e) => setText(e.target.value)}
              readOnly={!canWrite}
              aria-invalid={details.length > 0 || !!parsed.error}
            />
          </label>
          {parsed.error ? (
            <span className="field-error" role="alert">
              Not JSON: {parsed.error}
            </span>
          ) : null}
          {details.length ? (
            <ul className="path-errors" aria-label="Rule errors">
              {details.map((d, i) => {
                const at = locate(positions, d.field);
                return (
                  <li key={i} className="field-error" role="alert">
                    <code>{d.field}</code>
                    {at ? (
                      <button type="button" className="small" onClick={() => jump(at.offset)}>
                        line {lineOf(text, at.offset)}
                        {at.path !== d.field ? ` (${at.path})` : ''}
                      </button>
                    ) : null}
                    : {d.message}
                  </li>
                );
              })}
            </ul>
          ) : null}
          <ErrorBox error={error} hideFields />
          {saved ? (
            <p className="ok" role="status">
              Saved: version {saved.version}.
            </p>
          ) : null}
          {canWrite ? (
            <button type="submit" disabled={busy || !name.trim() || !!parsed.error}>
              Save role
            </button>
          ) : null}
        </form>
        <SchemaReference def={def} rules={parsed.value?.rules} onInsert={canWrite ? insertSkeleton : null} />
      </div>
    </section>
  );
}

// SchemaReference lists the active schema's entities and fields (what a
// rule may name), each entity with a button inserting its rule skeleton.
function SchemaReference({ def, rules, onInsert }) {
  if (!def)
    return (
      <aside className="card" aria-label="Schema reference">
        <p className="hint">No active schema to show (or no schema:*:read scope).</p>
      </aside>
    );
  return (
    <aside className="card" aria-label="Schema reference">
      <h2>Active schema {def.name ? <small>{def.name}</small> : null}</h2>
      <p className="hint">
        Variables: <code>$user.id</code>, <code>$user.roles</code>, <code>$user.claims.&lt;path&gt;</code>. Cross a relationship with{' '}
        <code>&lt;field&gt;_some</code>, <code>_none</code>, <code>_every</code>.
      </p>
      {def.entities.map((e) => (
        <div key={e.name} className="ref-entity">
          <h3>
            {e.name}{' '}
            {onInsert ? (
              <button type="button" className="small" disabled={!!(rules && rules[e.name])} onClick={() => onInsert(e.name)} aria-label={`Insert rules for ${e.name}`}>
                {rules && rules[e.name] ? 'has rules' : 'Insert rules'}
              </button>
            ) : null}
          </h3>
          <ul>
            <li>
              <code>id</code> <small>STRING</small>, <code>createdAt</code>, <code>updatedAt</code> <small>TIMESTAMP</small>
            </li>
            {e.fields.map((f) => (
              <li key={f.name}>
                <code>{f.name}</code> <small>{f.type + (f.list ? '[]' : '')}</small>
              </li>
            ))}
            {(def.relationships || [])
              .filter((r) => r.from === e.name || r.to === e.name)
              .map((r) => {
                const out = r.from === e.name;
                const fname = out ? r.fromField || r.name : r.toField;
                return fname ? (
                  <li key={r.name + out}>
                    <code>{fname}_some</code> <small>→ {out ? r.to : r.from}</small>
                  </li>
                ) : null;
              })}
          </ul>
        </div>
      ))}
    </aside>
  );
}

// ---- where a JSON path is in the text ----

// jsonPositions maps every path in a JSON text ("rules.Todo.read",
// "scopes[0]") to the offset where its key (or array element) starts. The
// text is valid JSON (it parsed), so the scanner trusts its shape.
export function jsonPositions(text) {
  const out = {};
  let i = 0;
  const ws = () => {
    while (i < text.length && /\s/.test(text[i])) i++;
  };
  const str = () => {
    const start = i;
    i++;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i));
  };
  const value = (path) => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      for (;;) {
        ws();
        if (text[i] === '}') {
          i++;
          return;
        }
        const at = i;
        const k = str();
        const p = path ? path + '.' + k : k;
        out[p] = at;
        ws();
        i++; // ':'
        value(p);
        ws();
        if (text[i] === ',') i++;
      }
    } else if (c === '[') {
      i++;
      for (let n = 0; ; n++) {
        ws();
        if (text[i] === ']') {
          i++;
          return;
        }
        const p = `${path}[${n}]`;
        out[p] = i;
        value(p);
        ws();
        if (text[i] === ',') i++;
      }
    } else if (c === '"') str();
    else while (i < text.length && !/[\s,\]}]/.test(text[i])) i++;
  };
  value('');
  return out;
}

// locate finds an error's path, or its longest enclosing path, in positions.
export function locate(positions, path) {
  for (let p = path; p; p = p.replace(/(\.[^.[\]]*|\[\d+\])$/, '')) {
    if (positions[p] !== undefined) return { path: p, offset: positions[p] };
    if (!/(\.[^.[\]]*|\[\d+\])$/.test(p)) break;
  }
  return null;
}

const lineOf = (text, offset) => text.slice(0, offset).split('\n').length;
