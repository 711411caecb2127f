// Schemas: list, view, edit as a form, the evolution plan (dry run) before
// apply with destructive steps called out, and activate.
import { useState } from 'react';
import { allows, api, ApiError, enc, errorAt } from './api.js';
import { ErrorBox, fmtTime, Link, ListTable, navigate, Row, useAction, useLoad } from './ui.jsx';

export const TYPES = ['STRING', 'TEXT', 'INTEGER', 'NUMBER', 'BOOLEAN', 'TIMESTAMP', 'DATE', 'JSON', 'ENUM', 'FILE', 'VECTOR'];
const LISTABLE = (t) => !['VECTOR', 'JSON', 'FILE'].includes(t);

// loadActive returns the active schema's definition, or null if there is none.
export async function loadActive(signal) {
  const { schemas } = await api.get('/schemas', { signal });
  const active = schemas.find((s) => s.active);
  return active ? api.get('/schemas/' + enc(active.id), { signal }) : null;
}

export function Schemas({ me, rest }) {
  if (rest === 'new') return <SchemaEditor me={me} />;
  if (rest) return <SchemaView me={me} id={rest} />;
  return <SchemaList me={me} />;
}

function SchemaList({ me }) {
  const { data, error, reload } = useLoad((signal) => api.get('/schemas', { signal }), []);
  const [actError, act] = useAction();
  const canUpdate = allows(me.scopes, 'schema', '*', 'update');
  return (
    <section>
      <div className="toolbar">
        <h1>Schemas</h1>
        {allows(me.scopes, 'schema', '*', 'create') ? (
          <button type="button" onClick={() => navigate('/schemas/new')}>
            New schema
          </button>
        ) : null}
      </div>
      <ErrorBox error={error || actError} />
      <ListTable label="Schemas" items={data && data.schemas} empty="No schema yet. A tenant's first schema becomes its active one." head={["Name", "Version", "Entities", "Status", "Updated", ""]}>
        {(s) => (
              <tr key={s.id}>
                <td>
                  <Link to={'/schemas/' + s.id}>{s.name}</Link>
                </td>
                <td>{s.version}</td>
                <td>{(s.entities || []).map((e) => e.name).join(', ')}</td>
                <td>{s.active ? <span className="badge ok">active</span> : <span className="badge">inactive</span>}</td>
                <td>{fmtTime(s.updatedAt)}</td>
                <td>
                  {!s.active && canUpdate ? (
                    <button
                      type="button"
                      onClick={() =>
                        act(async () => {
                          await api.post('/schemas/' + enc(s.id) + '/activate');
                          reload();
                        })
                      }
                    >
                      Activate
                    </button>
                  ) : null}
                </td>
              </tr>
        )}
      </ListTable>
    </section>
  );
}

function SchemaView({ me, id }) {
  const { data, error, reload } = useLoad((signal) => api.get('/schemas/' + enc(id), { signal }), [id]);
  const [editing, setEditing] = useState(false);
  if (error) return <ErrorBox error={error} />;
  if (!data) return <p>Loading…</p>;
  if (editing)
    return (
      <SchemaEditor
        me={me}
        existing={data}
        onDone={() => {
          setEditing(false);
          reload();
        }}
      />
    );
  return (
    <section>
      <div className="toolbar">
        <h1>
          {data.name} <small>v{data.version}</small> {data.active ? <span className="badge ok">active</span> : null}
        </h1>
        {allows(me.scopes, 'schema', '*', 'update') ? (
          <button type="button" onClick={() => setEditing(true)}>
            Edit
          </button>
        ) : null}
      </div>
      {data.entities.map((e) => (
        <div key={e.name} className="card">
          <h2>
            {e.name} {allows(me.scopes, 'entity', e.name, 'read') && data.active ? <Link to={'/records/' + e.name}>records →</Link> : null}
          </h2>
          <table className="grid compact">
            <thead>
              <tr>
                <th>Field</th>
                <th>Type</th>
                <th>Options</th>
              </tr>
            </thead>
            <tbody>
              {e.fields.map((f) => (
                <tr key={f.name}>
                  <td>{f.name}</td>
                  <td>
                    {f.type}
                    {f.list ? '[]' : ''}
                    {f.type === 'VECTOR' ? `(${f.vectorDimensions})` : ''}
                  </td>
                  <td>{fieldOptions(f)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
      {(data.relationships || []).length ? (
        <div className="card">
          <h2>Relationships</h2>
          <table className="grid compact">
            <tbody>
              {data.relationships.map((r) => (
                <tr key={r.name}>
                  <td>{r.name}</td>
                  <td>
                    {r.from} → {r.to}
                  </td>
                  <td>{(r.properties || []).map((p) => `${p.name}: ${p.type}`).join(', ')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}

function fieldOptions(f) {
  const o = [];
  for (const k of ['required', 'unique', 'searchable', 'indexed']) if (f[k]) o.push(k);
  if (f.values) o.push('values: ' + f.values.join(' | '));
  if (f.maxLength) o.push('maxLength ' + f.maxLength);
  if (f.default !== undefined) o.push('default ' + JSON.stringify(f.default));
  return o.join(', ');
}

// ---- the editor ----

const blankField = () => ({ name: '', type: 'STRING' });

// toForm keeps defaults as text while editing; fromForm parses them back.
function toForm(def) {
  const f = (x) => ({ ...x, default: x.default === undefined ? '' : typeof x.default === 'string' ? x.default : JSON.stringify(x.default), values: (x.values || []).join(', ') });
  return {
    name: def.name,
    entities: def.entities.map((e) => ({ name: e.name, softDelete: !!e.softDelete, history: !!e.history, fields: e.fields.map(f) })),
    relationships: (def.relationships || []).map((r) => ({ ...r, properties: (r.properties || []).map(f) })),
  };
}

function parseDefault(f) {
  if (f.default === '' || f.default === undefined) return undefined;
  if (['STRING', 'TEXT', 'ENUM', 'TIMESTAMP', 'DATE'].includes(f.type) && !f.list) return f.default;
  try {
    return JSON.parse(f.default);
  } catch {
    return f.default; // the API names the field if this is wrong
  }
}

function fromForm(form) {
  const field = (f) => {
    const out = { name: f.name.trim(), type: f.type };
    for (const k of ['required', 'unique', 'searchable', 'indexed', 'list']) if (f[k]) out[k] = true;
    const d = parseDefault(f);
    if (d !== undefined) out.default = d;
    if (f.type === 'ENUM')
      out.values = String(f.values || '')
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean);
    if (f.type === 'VECTOR') out.vectorDimensions = Number(f.vectorDimensions) || 0;
    if ((f.type === 'STRING' || f.type === 'TEXT') && f.maxLength) out.maxLength = Number(f.maxLength);
    return out;
  };
  return {
    name: form.name.trim(),
    entities: form.entities.map((e) => ({
      name: e.name.trim(),
      ...(e.softDelete ? { softDelete: true } : {}),
      ...(e.history ? { history: true } : {}),
      fields: e.fields.map(field),
    })),
    relationships: form.relationships.map((r) => {
      const out = { name: r.name.trim(), from: r.from, to: r.to };
      if (r.fromField) out.fromField = r.fromField.trim();
      if (r.toField) out.toField = r.toField.trim();
      if (r.properties.length) out.properties = r.properties.map(field);
      return out;
    }),
  };
}

function FieldRow({ f, path, errs, onChange, onRemove, label }) {
  const set = (k, v) => onChange({ ...f, [k]: v });
  const e = (k) => errs[`${path}.${k}`];
  return (
    <fieldset className="field-row" aria-label={label}>
      <Row label="Name" error={e('name') || errs[path]}>
        <input value={f.name} onChange={(ev) => set('name', ev.target.value)} placeholder="name" required />
      </Row>
      <Row label="Type" error={e('type')}>
        <select value={f.type} onChange={(ev) => set('type', ev.target.value)}>
          {TYPES.map((t) => (
            <option key={t}>{t}</option>
          ))}
        </select>
      </Row>
      <div className="checks">
        {['required', 'unique', 'searchable', 'indexed'].map((k) => (
          <label key={k} className="check">
            <input type="checkbox" checked={!!f[k]} onChange={(ev) => set(k, ev.target.checked)} /> {k}
          </label>
        ))}
        {LISTABLE(f.type) ? (
          <label className="check">
            <input type="checkbox" checked={!!f.list} onChange={(ev) => set('list', ev.target.checked)} /> list
          </label>
        ) : null}
        {e('required') || e('unique') || e('searchable') || e('indexed') || e('list') ? (
          <span className="field-error">{e('required') || e('unique') || e('searchable') || e('indexed') || e('list')}</span>
        ) : null}
      </div>
      {f.type === 'ENUM' ? (
        <Row label="Values" error={errorAt(errs, path + '.values')} hint="comma-separated">
          <input value={f.values || ''} onChange={(ev) => set('values', ev.target.value)} placeholder="draft, live" />
        </Row>
      ) : null}
      {f.type === 'VECTOR' ? (
        <Row label="Dimensions" error={e('vectorDimensions')}>
          <input type="number" min="1" max="16000" value={f.vectorDimensions || ''} onChange={(ev) => set('vectorDimensions', ev.target.value)} />
        </Row>
      ) : null}
      {f.type === 'STRING' || f.type === 'TEXT' ? (
        <Row label="Max length" error={e('maxLength')}>
          <input type="number" min="0" value={f.maxLength || ''} onChange={(ev) => set('maxLength', ev.target.value)} />
        </Row>
      ) : null}
      {!['FILE', 'VECTOR', 'JSON'].includes(f.type) ? (
        <Row label="Default" error={e('default')} hint={f.list || !['STRING', 'TEXT', 'ENUM', 'TIMESTAMP', 'DATE'].includes(f.type) ? 'JSON' : undefined}>
          <input value={f.default ?? ''} onChange={(ev) => set('default', ev.target.value)} />
        </Row>
      ) : null}
      <button type="button" className="danger small" onClick={onRemove} aria-label={`Remove ${label}`}>
        ✕
      </button>
    </fieldset>
  );
}

function SchemaEditor({ me, existing, onDone }) {
  const [form, setForm] = useState(() =>
    existing ? toForm(existing) : { name: '', entities: [{ name: '', fields: [blankField()] }], relationships: [] },
  );
  const [error, setError] = useState(null);
  const [plan, setPlan] = useState(null); // {steps, destructive}
  const [allowLoss, setAllowLoss] = useState(false);
  const [busy, setBusy] = useState(false);
  const errs = error instanceof ApiError ? error.fieldErrors() : {};
  const entityNames = form.entities.map((e) => e.name).filter(Boolean);

  const update = (fn) => {
    setPlan(null);
    setForm((f) => {
      const next = structuredClone(f);
      fn(next);
      return next;
    });
  };

  async function run(kind) {
    setBusy(true);
    setError(null);
    try {
      const def = fromForm(form);
      if (!existing) {
        const created = await api.post('/schemas', def);
        navigate('/schemas/' + created.id);
        return;
      }
      const base = '/schemas/' + enc(existing.id);
      if (kind === 'plan') {
        const res = await api.put(base + '?dryRun=true&allowDataLoss=true', def);
        setPlan(res.plan);
        setAllowLoss(false);
        return;
      }
      await api.put(base + (allowLoss ? '?allowDataLoss=true' : ''), def);
      onDone();
    } catch (e) {
      if (e instanceof ApiError && e.plan) setPlan(e.plan);
      setError(e);
    } finally {
      setBusy(false);
    }
  }
  const destructive = plan ? plan.steps.filter((s) => s.destructive) : [];

  return (
    <form
      className="editor"
      onSubmit={(e) => {
        e.preventDefault();
        run(existing && !plan ? 'plan' : 'apply');
      }}
    >
      <div className="toolbar">
        <h1>{existing ? `Edit ${existing.name} (v${existing.version})` : 'New schema'}</h1>
      </div>
      <Row label="Schema name" error={errs.name}>
        <input value={form.name} onChange={(e) => update((f) => (f.name = e.target.value))} required disabled={!!existing} name="schemaName" />
      </Row>
      <h2>Entities</h2>
      {form.entities.map((ent, i) => (
        <div className="card" key={i}>
          <div className="toolbar">
            <Row label="Entity name" error={errs[`entities[${i}].name`] || errs[`entities[${i}]`]} hint="PascalCase">
              <input value={ent.name} onChange={(e) => update((f) => (f.entities[i].name = e.target.value))} required aria-label={`Entity ${i + 1} name`} />
            </Row>
            <label className="check" title="DELETE sets deletedAt; reads hide the record; it can be restored">
              <input type="checkbox" checked={!!ent.softDelete} onChange={(e) => update((f) => (f.entities[i].softDelete = e.target.checked))} aria-label={`Entity ${i + 1} soft delete`} /> soft delete
            </label>
            <label className="check" title="keep every version of every record">
              <input type="checkbox" checked={!!ent.history} onChange={(e) => update((f) => (f.entities[i].history = e.target.checked))} aria-label={`Entity ${i + 1} history`} /> history
            </label>
            <button type="button" className="danger" onClick={() => update((f) => f.entities.splice(i, 1))}>
              Remove entity
            </button>
          </div>
          {errs[`entities[${i}].fields`] ? <span className="field-error">{errs[`entities[${i}].fields`]}</span> : null}
          {ent.fields.map((fd, j) => (
            <FieldRow
              key={j}
              f={fd}
              label={`${ent.name || 'entity'} field ${j + 1}`}
              path={`entities[${i}].fields[${j}]`}
              errs={errs}
              onChange={(nf) => update((f) => (f.entities[i].fields[j] = nf))}
              onRemove={() => update((f) => f.entities[i].fields.splice(j, 1))}
            />
          ))}
          <button type="button" onClick={() => update((f) => f.entities[i].fields.push(blankField()))}>
            Add field
          </button>
        </div>
      ))}
      <button type="button" onClick={() => update((f) => f.entities.push({ name: '', fields: [blankField()] }))}>
        Add entity
      </button>

      <h2>Relationships</h2>
      {form.relationships.map((r, i) => {
        const p = `relationships[${i}]`;
        const set = (k) => (e) => update((f) => (f.relationships[i][k] = e.target.value));
        return (
          <div className="card" key={i}>
            <div className="rel-grid">
              <Row label="Type name" error={errs[p + '.name'] || errs[p]}>
                <input value={r.name} onChange={set('name')} required aria-label={`Relationship ${i + 1} name`} placeholder="IN_CATEGORY" />
              </Row>
              <Row label="From" error={errs[p + '.from']}>
                <select value={r.from} onChange={set('from')} aria-label={`Relationship ${i + 1} from`}>
                  {entityNames.map((n) => (
                    <option key={n}>{n}</option>
                  ))}
                </select>
              </Row>
              <Row label="To" error={errs[p + '.to']}>
                <select value={r.to} onChange={set('to')} aria-label={`Relationship ${i + 1} to`}>
                  {entityNames.map((n) => (
                    <option key={n}>{n}</option>
                  ))}
                </select>
              </Row>
              <Row label="From field" error={errs[p + '.fromField']} hint="GraphQL field on From">
                <input value={r.fromField || ''} onChange={set('fromField')} aria-label={`Relationship ${i + 1} from field`} />
              </Row>
              <Row label="To field" error={errs[p + '.toField']} hint="GraphQL field on To">
                <input value={r.toField || ''} onChange={set('toField')} aria-label={`Relationship ${i + 1} to field`} />
              </Row>
              <button type="button" className="danger" onClick={() => update((f) => f.relationships.splice(i, 1))}>
                Remove relationship
              </button>
            </div>
            <h3>Properties</h3>
            {r.properties.map((pf, j) => (
              <FieldRow
                key={j}
                f={pf}
                label={`${r.name || 'relationship'} property ${j + 1}`}
                path={`${p}.properties[${j}]`}
                errs={errs}
                onChange={(nf) => update((f) => (f.relationships[i].properties[j] = nf))}
                onRemove={() => update((f) => f.relationships[i].properties.splice(j, 1))}
              />
            ))}
            <button type="button" onClick={() => update((f) => f.relationships[i].properties.push(blankField()))}>
              Add property
            </button>
          </div>
        );
      })}
      <button
        type="button"
        disabled={entityNames.length === 0}
        onClick={() => update((f) => f.relationships.push({ name: '', from: entityNames[0], to: entityNames[entityNames.length - 1], properties: [] }))}
      >
        Add relationship
      </button>

      {plan ? (
        <div className={'card plan' + (destructive.length ? ' destructive' : '')} aria-label="Evolution plan">
          <h2>Evolution plan</h2>
          {plan.steps.length === 0 ? <p>No change.</p> : null}
          {destructive.length ? (
            <p className="warn" role="alert">
              {destructive.length} destructive step{destructive.length > 1 ? 's' : ''}: data will be lost.
            </p>
          ) : null}
          <ol>
            {plan.steps.map((s, i) => (
              <li key={i} className={s.destructive ? 'destructive' : ''}>
                {s.destructive ? <strong>DESTRUCTIVE </strong> : null}
                {s.description}
                <pre>{s.sql}</pre>
              </li>
            ))}
          </ol>
          {destructive.length ? (
            <label className="check">
              <input type="checkbox" checked={allowLoss} onChange={(e) => setAllowLoss(e.target.checked)} /> I accept losing the data of the destructive steps
            </label>
          ) : null}
        </div>
      ) : null}
      <ErrorBox error={error} hideFields={Object.keys(errs).length > 0 && error?.code === 'VALIDATION_ERROR'} />
      <div className="actions sticky">
        {existing ? (
          <>
            <button type="submit" disabled={busy || (plan && destructive.length > 0 && !allowLoss)}>
              {plan ? 'Apply plan' : 'Review plan'}
            </button>
            <button type="button" onClick={onDone}>
              Cancel
            </button>
          </>
        ) : (
          <button type="submit" disabled={busy}>
            Create schema
          </button>
        )}
      </div>
      {me ? null : null}
    </form>
  );
}
