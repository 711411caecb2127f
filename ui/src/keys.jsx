// API keys: list with lastUsed, create with a scopes picker (the secret is
// shown once, with a copy button), revoke.
import { useState } from 'react';
import { allows, api, ApiError, enc, errorAt } from './api.js';
import { ErrorBox, fmtTime, ListTable, Row, Secret, useAction, useLoad } from './ui.jsx';
import { loadActive } from './schemas.jsx';

const KINDS = ['entity', 'relationship', 'schema', 'apikey', 'webhook', 'file', 'job'];
const OPS = ['read', 'create', 'update', 'delete'];

export function Keys({ me }) {
  const { data, error, reload } = useLoad((signal) => api.get('/api-keys', { signal }), []);
  const [created, setCreated] = useState(null);
  const [actError, act] = useAction();
  return (
    <section>
      <div className="toolbar">
        <h1>API keys</h1>
      </div>
      {created ? <Secret title={`Key “${created.name}” created`} value={created.key} onDone={() => setCreated(null)} /> : null}
      {allows(me.scopes, 'apikey', '*', 'create') ? (
        <NewKey
          me={me}
          onCreated={(k) => {
            setCreated(k);
            reload();
          }}
        />
      ) : null}
      <ErrorBox error={error || actError} />
      <ListTable label="API keys" items={data && data.keys} empty="No keys." head={["Name", "Prefix", "Scopes", "Created", "Last used", ""]}>
        {(k) => (
              <tr key={k.id}>
                <td>
                  {k.name} {k.id === me.keyId ? <span className="badge">this key</span> : null}
                </td>
                <td>
                  <code>{k.prefix}</code>
                </td>
                <td>{k.scopes.join(', ')}</td>
                <td>{fmtTime(k.createdAt)}</td>
                <td>{k.lastUsed ? fmtTime(k.lastUsed) : 'never'}</td>
                <td>
                  {allows(me.scopes, 'apikey', '*', 'delete') ? (
                    <button
                      type="button"
                      className="small danger"
                      aria-label={`Revoke ${k.name}`}
                      onClick={() =>
                        window.confirm(`Revoke “${k.name}”? Apps using it stop working at once.`) &&
                        act(async () => {
                          await api.del('/api-keys/' + enc(k.id));
                          reload();
                        })
                      }
                    >
                      Revoke
                    </button>
                  ) : null}
                </td>
              </tr>
        )}
      </ListTable>
    </section>
  );
}

function NewKey({ me, onCreated }) {
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState([]);
  const [pick, setPick] = useState({ kind: 'entity', name: '*', op: 'read' });
  const [error, setError] = useState(null);
  const canSchema = allows(me.scopes, 'schema', '*', 'read');
  const { data: def } = useLoad((signal) => (canSchema ? loadActive(signal).catch(() => null) : Promise.resolve(null)), [canSchema]);
  const names =
    pick.kind === 'entity' ? (def?.entities || []).map((e) => e.name) : pick.kind === 'relationship' ? (def?.relationships || []).map((r) => r.name) : [];
  const errs = error instanceof ApiError ? error.fieldErrors() : {};
  const scopeErr = errorAt(errs, 'scopes');
  const add = (s) => setScopes((ss) => (ss.includes(s) ? ss : [...ss, s]));
  return (
    <form
      className="card"
      aria-label="New API key"
      onSubmit={async (e) => {
        e.preventDefault();
        setError(null);
        try {
          const k = await api.post('/api-keys', { name, scopes });
          setName('');
          setScopes([]);
          onCreated(k);
        } catch (x) {
          setError(x);
        }
      }}
    >
      <h2>New key</h2>
      <Row label="Name" error={errs.name}>
        <input value={name} onChange={(e) => setName(e.target.value)} required name="keyName" />
      </Row>
      <div className="scope-picker">
        <select aria-label="Scope kind" value={pick.kind} onChange={(e) => setPick({ ...pick, kind: e.target.value, name: '*' })}>
          {['*', ...KINDS].map((k) => (
            <option key={k}>{k}</option>
          ))}
        </select>
        <select aria-label="Scope name" value={pick.name} onChange={(e) => setPick({ ...pick, name: e.target.value })} disabled={!['entity', 'relationship'].includes(pick.kind)}>
          {['*', ...names].map((n) => (
            <option key={n}>{n}</option>
          ))}
        </select>
        <select aria-label="Scope operation" value={pick.op} onChange={(e) => setPick({ ...pick, op: e.target.value })}>
          {['*', ...OPS].map((o) => (
            <option key={o}>{o}</option>
          ))}
        </select>
        <button type="button" onClick={() => add(`${pick.kind}:${pick.kind === '*' ? '*' : pick.name}:${pick.op}`)}>
          Add scope
        </button>
      </div>
      <ul className="chips" aria-label="Scopes">
        {scopes.map((s) => (
          <li key={s}>
            <code>{s}</code>
            <button type="button" className="small" aria-label={`Remove scope ${s}`} onClick={() => setScopes((ss) => ss.filter((x) => x !== s))}>
              ✕
            </button>
          </li>
        ))}
      </ul>
      {scopeErr ? <span className="field-error">{scopeErr}</span> : null}
      <ErrorBox error={error} hideFields />
      <button type="submit" disabled={!name || scopes.length === 0}>
        Create key
      </button>
    </form>
  );
}
