// Records: a server-paged, sortable table per entity with a filter builder
// that writes the query DSL (and shows it), full-text search, typed
// create/edit/delete forms, and the record's relationships with their
// properties (add and remove edges). Never fetches a whole table.
import { useEffect, useMemo, useState } from 'react';
import { allows, api, ApiError, enc, errorAt } from './api.js';
import { loadActive } from './schemas.jsx';
import { FieldInput, fieldHint, fromText, toText } from './fields.jsx';
import { Deleted, History } from './history.jsx';
import { Aggregate } from './aggregate.jsx';
import { Empty, ErrorBox, fmtTime, Link, navigate, Row, useAction, useLoad } from './ui.jsx';

const PAGE = 50;
const SYSTEM = [
  { name: 'id', type: 'STRING' },
  { name: 'createdAt', type: 'TIMESTAMP' },
  { name: 'updatedAt', type: 'TIMESTAMP' },
];

export function Records({ me, rest, entityNames }) {
  const canSchema = allows(me.scopes, 'schema', '*', 'read');
  const { data: def, error } = useLoad((signal) => (canSchema ? loadActive(signal) : Promise.resolve(null)), [canSchema]);
  const [entity, sub] = splitOnce(rest, '/');
  // Without schema:read the entities come from the scopes and the columns from the data.
  const entities = def
    ? def.entities.filter((e) => allows(me.scopes, 'entity', e.name, 'read'))
    : entityNames // view as user: the schema's names (read by the console's credential) the user's scopes allow
      ? entityNames.filter((n) => allows(me.scopes, 'entity', n, 'read')).map((n) => ({ name: n, fields: null }))
      : [...new Set(me.scopes.map((s) => s.split(':')).filter(([k, n, o]) => (k === 'entity' || k === '*') && n !== '*' && (o === 'read' || o === '*')).map(([, n]) => n))].map((n) => ({ name: n, fields: null }));
  // A deep link to an entity the scopes do not cover still asks the API, which
  // answers with its own reason (403 naming the missing scope).
  const ent = entities.find((e) => e.name === entity) || (entity ? (def ? def.entities.find((e) => e.name === entity) : { name: entity, fields: null }) : undefined);
  useEffect(() => {
    if (!entity && entities.length) navigate('/records/' + entities[0].name);
  }, [entity, entities.length]); // eslint-disable-line react-hooks/exhaustive-deps
  if (error) return <ErrorBox error={error} />;
  if (canSchema && !def) return def === null ? <Empty>No active schema yet: create one under Schemas.</Empty> : <p>Loading…</p>;
  return (
    <div className="split">
      <nav className="side" aria-label="Entities">
        {entities.map((e) => (
          <Link key={e.name} to={'/records/' + e.name} aria-current={e.name === entity ? 'page' : undefined}>
            {e.name}
          </Link>
        ))}
        {entities.length === 0 ? <Empty>No entity is readable with this credential.</Empty> : null}
      </nav>
      <section className="content">
        {ent && !sub ? <Table key={ent.name} me={me} ent={ent} def={def} /> : null}
        {ent && sub ? <RecordPage key={ent.name + sub} me={me} ent={ent} def={def} id={sub === 'new' ? null : sub} /> : null}
        {entity && !ent ? <ErrorBox error={{ message: `No readable entity ${entity} in the active schema.` }} /> : null}
      </section>
    </div>
  );
}

function splitOnce(s, sep) {
  const i = s.indexOf(sep);
  return i < 0 ? [s, ''] : [s.slice(0, i), s.slice(i + 1)];
}

// ---- filter builder ----

const ORDERED = ['STRING', 'TEXT', 'ENUM', 'INTEGER', 'NUMBER', 'TIMESTAMP', 'DATE'];
const TEXTUAL = ['STRING', 'TEXT', 'ENUM'];
function opsFor(f) {
  if (f.type === 'VECTOR') return ['$isNull'];
  if (f.list) return ['$contains', '$in', '$notIn', '$isNull'];
  const ops = ['$eq', '$neq'];
  if (ORDERED.includes(f.type)) ops.push('$gt', '$gte', '$lt', '$lte');
  if (TEXTUAL.includes(f.type)) ops.push('$contains', '$startsWith', '$endsWith');
  if (f.type === 'JSON') ops.push('$contains');
  else if (f.type !== 'BOOLEAN') ops.push('$in', '$notIn');
  ops.push('$isNull');
  return ops;
}

function filterValue(f, op, text) {
  if (op === '$isNull') return text !== 'false';
  const one = (s) => fromText({ ...f, list: false }, s);
  if (op === '$in' || op === '$notIn')
    return text
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .map(one);
  if (f.type === 'JSON') {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return one(text);
}

// buildWhere turns filter rows into the query DSL.
export function buildWhere(rows, fields, match) {
  const conds = rows
    .filter((r) => r.field && (r.op === '$isNull' || r.value !== ''))
    .map((r) => {
      const f = fields.find((x) => x.name === r.field) || { name: r.field, type: 'STRING' };
      return { [r.field]: { [r.op]: filterValue(f, r.op, r.value) } };
    });
  if (conds.length === 0) return undefined;
  if (conds.length === 1 && match === 'all') return conds[0];
  return { [match === 'all' ? '$and' : '$or']: conds };
}

function FilterBuilder({ fields, onApply }) {
  const [rows, setRows] = useState([]);
  const [match, setMatch] = useState('all');
  const where = buildWhere(rows, fields, match);
  const set = (i, k, v) =>
    setRows((rs) =>
      rs.map((r, j) => {
        if (j !== i) return r;
        const n = { ...r, [k]: v };
        if (k === 'field') n.op = opsFor(fields.find((f) => f.name === v) || {})[0];
        return n;
      }),
    );
  return (
    <form
      className="filters"
      aria-label="Filter"
      onSubmit={(e) => {
        e.preventDefault();
        onApply(where);
      }}
    >
      {rows.map((r, i) => {
        const f = fields.find((x) => x.name === r.field) || fields[0];
        return (
          <div className="filter-row" key={i}>
            <select aria-label="Filter field" value={r.field} onChange={(e) => set(i, 'field', e.target.value)}>
              {fields.map((x) => (
                <option key={x.name}>{x.name}</option>
              ))}
            </select>
            <select aria-label="Operator" value={r.op} onChange={(e) => set(i, 'op', e.target.value)}>
              {opsFor(f).map((o) => (
                <option key={o}>{o}</option>
              ))}
            </select>
            {r.op === '$isNull' ? (
              <select aria-label="Filter value" value={r.value || 'true'} onChange={(e) => set(i, 'value', e.target.value)}>
                <option>true</option>
                <option>false</option>
              </select>
            ) : f.type === 'ENUM' && !['$in', '$notIn', '$contains', '$startsWith', '$endsWith'].includes(r.op) ? (
              <select aria-label="Filter value" value={r.value} onChange={(e) => set(i, 'value', e.target.value)}>
                <option value="">—</option>
                {(f.values || []).map((v) => (
                  <option key={v}>{v}</option>
                ))}
              </select>
            ) : (
              <input
                aria-label="Filter value"
                value={r.value}
                type={f.type === 'DATE' ? 'date' : f.type === 'TIMESTAMP' ? 'datetime-local' : ['INTEGER', 'NUMBER'].includes(f.type) && !r.op.endsWith('In') ? 'number' : 'text'}
                step="any"
                placeholder={r.op.endsWith('In') ? 'a, b, c' : 'value'}
                onChange={(e) => set(i, 'value', e.target.value)}
              />
            )}
            <button type="button" className="small danger" aria-label="Remove condition" onClick={() => setRows((rs) => rs.filter((_, j) => j !== i))}>
              ✕
            </button>
          </div>
        );
      })}
      <div className="actions">
        <button type="button" onClick={() => setRows((rs) => [...rs, { field: fields[0].name, op: opsFor(fields[0])[0], value: '' }])}>
          Add condition
        </button>
        {rows.length > 1 ? (
          <select aria-label="Match" value={match} onChange={(e) => setMatch(e.target.value)}>
            <option value="all">match all ($and)</option>
            <option value="any">match any ($or)</option>
          </select>
        ) : null}
        <button type="submit">Apply filter</button>
      </div>
      <pre className="dsl" aria-label="Query DSL">
        {JSON.stringify({ where: where || {} })}
      </pre>
    </form>
  );
}

// ---- table ----

function Table({ me, ent }) {
  const [page, setPage] = useState({ offset: 0, orderBy: null, dir: 'ASC' });
  const [where, setWhere] = useState(undefined);
  const [search, setSearch] = useState('');
  const [searchText, setSearchText] = useState('');
  const [view, setView] = useState('records'); // or 'aggregate': the same filter, grouped
  const fields = ent.fields;
  const body = useMemo(() => {
    const b = { limit: PAGE, offset: page.offset, includeCount: true };
    if (where) b.where = where;
    if (search) b.search = search;
    if (page.orderBy) {
      b.orderBy = page.orderBy;
      b.orderDirection = page.dir;
    }
    return b;
  }, [page, where, search]);
  const { data, error, loading } = useLoad(
    (signal) => (view === 'records' ? api.post(`/dynamic/${enc(ent.name)}/query`, body, { signal }) : Promise.resolve(null)),
    [ent.name, body, view],
  );
  const cols = fields ? ['id', ...fields.filter((f) => f.type !== 'VECTOR').map((f) => f.name), 'updatedAt'] : data && data.items[0] ? Object.keys(data.items[0]) : ['id'];
  const sortable = (c) => {
    const f = fields && fields.find((x) => x.name === c);
    return !f ? ['id', 'updatedAt', 'createdAt'].includes(c) : !f.list && !['JSON', 'VECTOR'].includes(f.type);
  };
  const searchable = fields ? fields.some((f) => f.searchable) : true;
  const count = data ? data.count : 0;
  return (
    <>
      <div className="toolbar">
        <h1>{ent.name}</h1>
        <div className="tabs" role="group" aria-label="View">
          <button type="button" aria-pressed={view === 'records'} onClick={() => setView('records')}>
            Records
          </button>
          <button type="button" aria-pressed={view === 'aggregate'} onClick={() => setView('aggregate')}>
            Aggregate
          </button>
        </div>
        {searchable && view === 'records' ? (
          <form
            role="search"
            onSubmit={(e) => {
              e.preventDefault();
              setSearch(searchText.trim());
              setPage((p) => ({ ...p, offset: 0 }));
            }}
          >
            <input type="search" aria-label="Full-text search" placeholder="Search…" value={searchText} onChange={(e) => setSearchText(e.target.value)} />
          </form>
        ) : null}
        {allows(me.scopes, 'entity', ent.name, 'create') && fields ? (
          <button type="button" onClick={() => navigate(`/records/${ent.name}/new`)}>
            New {ent.name}
          </button>
        ) : null}
      </div>
      {fields ? (
        <FilterBuilder
          fields={[...fields, ...SYSTEM]}
          onApply={(w) => {
            setWhere(w);
            setPage((p) => ({ ...p, offset: 0 }));
          }}
        />
      ) : null}
      {view === 'aggregate' ? <Aggregate me={me} ent={ent} where={where} /> : <RecordsGrid {...{ ent, cols, sortable, page, setPage, data, error, loading, count }} />}
    </>
  );
}

function RecordsGrid({ ent, cols, sortable, page, setPage, data, error, loading, count }) {
  return (
    <>
      <ErrorBox error={error} />
      <div className="table-wrap" aria-busy={loading}>
        <table className="grid" aria-label={`${ent.name} records`}>
          <thead>
            <tr>
              {cols.map((c) => (
                <th key={c} aria-sort={page.orderBy === c ? (page.dir === 'ASC' ? 'ascending' : 'descending') : undefined}>
                  {sortable(c) ? (
                    <button
                      type="button"
                      className="link"
                      onClick={() => setPage((p) => ({ offset: 0, orderBy: c, dir: p.orderBy === c && p.dir === 'ASC' ? 'DESC' : 'ASC' }))}
                    >
                      {c} {page.orderBy === c ? (page.dir === 'ASC' ? '▲' : '▼') : ''}
                    </button>
                  ) : (
                    c
                  )}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {data &&
              data.items.map((r) => (
                <tr key={r.id}>
                  {cols.map((c) => (
                    <td key={c}>{c === 'id' ? <Link to={`/records/${ent.name}/${r.id}`}>{short(r.id)}</Link> : cell(r[c])}</td>
                  ))}
                </tr>
              ))}
          </tbody>
        </table>
      </div>
      {data && data.items.length === 0 ? <Empty>No records match.</Empty> : null}
      <div className="pager">
        <button type="button" disabled={page.offset === 0} onClick={() => setPage((p) => ({ ...p, offset: Math.max(0, p.offset - PAGE) }))}>
          ← Previous
        </button>
        <span aria-live="polite">
          {count ? `${page.offset + 1}–${Math.min(page.offset + PAGE, count)} of ${count}` : '0 records'}
        </span>
        <button type="button" disabled={!data || page.offset + PAGE >= count} onClick={() => setPage((p) => ({ ...p, offset: p.offset + PAGE }))}>
          Next →
        </button>
      </div>
    </>
  );
}

const short = (id) => (id && id.length > 13 ? id.slice(0, 8) + '…' + id.slice(-4) : id);

function cell(v) {
  if (v === null || v === undefined) return <span className="null">null</span>;
  if (typeof v === 'object') {
    const s = JSON.stringify(v);
    return s.length > 80 ? s.slice(0, 80) + '…' : s;
  }
  if (typeof v === 'string' && /^\d{4}-\d\d-\d\dT/.test(v)) return fmtTime(v);
  const s = String(v);
  return s.length > 80 ? s.slice(0, 80) + '…' : s;
}

// ---- one record ----

function RecordPage({ me, ent, def, id }) {
  // A soft-deleted record opens too, for a credential that may restore it.
  const canDelete = allows(me.scopes, 'entity', ent.name, 'delete');
  const withDeleted = ent.softDelete && canDelete ? '?withDeleted=true' : '';
  const { data, error, reload } = useLoad((signal) => (id ? api.get(`/dynamic/${enc(ent.name)}/${enc(id)}${withDeleted}`, { signal }) : Promise.resolve({})), [id]);
  if (error) return <ErrorBox error={error} />;
  if (!data) return <p>Loading…</p>;
  const rels = def ? (def.relationships || []).filter((r) => r.from === ent.name || r.to === ent.name) : [];
  return (
    <>
      <p>
        <Link to={'/records/' + ent.name}>← {ent.name}</Link>
      </p>
      {id && data.deletedAt ? <Deleted ent={ent} record={data} canRestore={canDelete} onRestored={reload} /> : null}
      <RecordForm key={data.deletedAt || 'live'} me={me} ent={ent} record={id ? data : null} />
      {id && ent.history ? <History ent={ent} id={id} /> : null}
      {id && !data.deletedAt // a deleted record's edges come back with it
        ? rels.map((r) =>
            allows(me.scopes, 'relationship', r.name, 'read') ? (
              <Edges key={r.name + (r.from === ent.name ? 'out' : 'in')} me={me} rel={r} ent={ent} def={def} id={id} direction={r.from === ent.name ? 'out' : 'in'} />
            ) : null,
          )
        : null}
    </>
  );
}

function RecordForm({ me, ent, record }) {
  const fields = ent.fields || [];
  const [values, setValues] = useState(() => Object.fromEntries(fields.map((f) => [f.name, record ? toText(f, record[f.name]) : ''])));
  const [error, setError] = useState(null);
  const [saved, setSaved] = useState(null);
  const [busy, setBusy] = useState(false);
  const canWrite = allows(me.scopes, 'entity', ent.name, record ? 'update' : 'create');
  const errs = error instanceof ApiError ? error.fieldErrors() : {};
  async function save(e) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setSaved(null);
    const body = {};
    for (const f of fields) {
      const before = record ? toText(f, record[f.name]) : '';
      if (record && values[f.name] === before) continue; // PATCH sends only what changed
      const v = fromText(f, values[f.name]);
      if (!record && v === null) continue; // absent: its default
      body[f.name] = v;
    }
    try {
      if (record) {
        const r = await api.patch(`/dynamic/${enc(ent.name)}/${enc(record.id)}`, body);
        Object.assign(record, r);
        setSaved('Saved.');
      } else {
        const r = await api.post(`/dynamic/${enc(ent.name)}`, body);
        navigate(`/records/${ent.name}/${r.id}`);
      }
    } catch (x) {
      setError(x);
    } finally {
      setBusy(false);
    }
  }
  async function remove() {
    const what = ent.softDelete ? 'It can be restored afterwards.' : 'Its edges and files go with it.';
    if (!window.confirm(`Delete this ${ent.name}? ${what}`)) return;
    try {
      await api.del(`/dynamic/${enc(ent.name)}/${enc(record.id)}`);
      navigate('/records/' + ent.name);
    } catch (x) {
      setError(x);
    }
  }
  return (
    <form className="card record-form" onSubmit={save} aria-label={record ? `Edit ${ent.name}` : `New ${ent.name}`}>
      <h1>{record ? `${ent.name} ${record.id}` : `New ${ent.name}`}</h1>
      {record ? (
        <p className="meta">
          created {fmtTime(record.createdAt)} · updated {fmtTime(record.updatedAt)}
        </p>
      ) : null}
      {fields.map((f) => (
        <Row key={f.name} label={`${f.name}`} hint={fieldHint(f)} error={errorAt(errs, f.name)}>
          <FieldInput f={f} entity={ent.name} value={values[f.name]} onChange={(v) => setValues((s) => ({ ...s, [f.name]: v }))} />
        </Row>
      ))}
      <ErrorBox error={error} hideFields={error?.code === 'VALIDATION_ERROR' && fields.some((f) => errs[f.name])} />
      {saved ? (
        <p className="ok" role="status">
          {saved}
        </p>
      ) : null}
      <div className="actions">
        {canWrite ? (
          <button type="submit" disabled={busy}>
            {record ? 'Save' : 'Create'}
          </button>
        ) : null}
        {record && allows(me.scopes, 'entity', ent.name, 'delete') ? (
          <button type="button" className="danger" onClick={remove}>
            Delete
          </button>
        ) : null}
      </div>
    </form>
  );
}

// label picks a readable field of a record (its first string field).
function labelOf(def, entityName, r) {
  const e = def && def.entities.find((x) => x.name === entityName);
  const f = e && e.fields.find((x) => (x.type === 'STRING' || x.type === 'TEXT') && !x.list);
  return f && r[f.name] != null ? String(r[f.name]) : short(r.id);
}

function Edges({ me, rel, ent, def, id, direction }) {
  const far = direction === 'out' ? rel.to : rel.from;
  const base = `/dynamic/${enc(ent.name)}/${enc(id)}/relationships/${enc(rel.name)}`;
  const [offset, setOffset] = useState(0);
  const { data, error, reload } = useLoad((signal) => api.get(`${base}?direction=${direction}&limit=${PAGE}&offset=${offset}`, { signal }), [base, offset]);
  const [actError, act] = useAction();
  const props = rel.properties || [];
  return (
    <div className="card" aria-label={`${rel.name} edges`}>
      <h2>
        {rel.name} <small>{direction === 'out' ? `→ ${far}` : `← ${far}`}</small>
      </h2>
      <ErrorBox error={error || actError} />
      {data && data.items.length ? (
        <table className="grid compact">
          <thead>
            <tr>
              <th>{far}</th>
              {props.map((p) => (
                <th key={p.name}>{p.name}</th>
              ))}
              <th />
            </tr>
          </thead>
          <tbody>
            {data.items.map((it) => (
              <tr key={it._relationship.id}>
                <td>
                  <Link to={`/records/${far}/${it.id}`}>{labelOf(def, far, it)}</Link>
                </td>
                {props.map((p) => (
                  <td key={p.name}>{cell(it.properties?.[p.name])}</td>
                ))}
                <td>
                  {allows(me.scopes, 'relationship', rel.name, 'delete') ? (
                    <button
                      type="button"
                      className="small danger"
                      aria-label={`Remove edge to ${labelOf(def, far, it)}`}
                      onClick={() =>
                        act(async () => {
                          await api.del(`${base}/by-id/${enc(it._relationship.id)}`);
                          reload();
                        })
                      }
                    >
                      Remove
                    </button>
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : data ? (
        <Empty>No edges.</Empty>
      ) : null}
      {data && (offset > 0 || data.items.length === PAGE) ? (
        <div className="pager">
          <button type="button" disabled={offset === 0} onClick={() => setOffset((o) => Math.max(0, o - PAGE))}>
            ← Previous
          </button>
          <button type="button" disabled={data.items.length < PAGE} onClick={() => setOffset((o) => o + PAGE)}>
            Next →
          </button>
        </div>
      ) : null}
      {direction === 'out' && allows(me.scopes, 'relationship', rel.name, 'create') ? <AddEdge rel={rel} def={def} base={base} onAdded={reload} /> : null}
    </div>
  );
}

function AddEdge({ rel, def, base, onAdded }) {
  const props = rel.properties || [];
  const [target, setTarget] = useState('');
  const [values, setValues] = useState({});
  const [error, setError] = useState(null);
  const [q, setQ] = useState('');
  const toEnt = def.entities.find((e) => e.name === rel.to);
  const labelField = toEnt && toEnt.fields.find((f) => (f.type === 'STRING' || f.type === 'TEXT') && !f.list);
  // Candidates: the first 20 targets whose label contains what was typed (server-side).
  const { data: cands } = useLoad(
    (signal) => {
      const body = { limit: 20 };
      if (labelField && q) body.where = { [labelField.name]: { $contains: q } };
      return api.post(`/dynamic/${enc(rel.to)}/query`, body, { signal });
    },
    [rel.to, q],
  );
  const errs = error instanceof ApiError ? error.fieldErrors() : {};
  return (
    <form
      className="add-edge"
      aria-label={`Add ${rel.name} edge`}
      onSubmit={async (e) => {
        e.preventDefault();
        setError(null);
        const properties = {};
        for (const p of props) {
          const v = fromText(p, values[p.name] ?? '');
          if (v !== null) properties[p.name] = v;
        }
        try {
          await api.post(base, { targetId: target, properties });
          setTarget('');
          setValues({});
          onAdded();
        } catch (x) {
          setError(x);
        }
      }}
    >
      <h3>Add edge</h3>
      {labelField ? (
        <Row label={`Find ${rel.to}`}>
          <input type="search" value={q} onChange={(e) => setQ(e.target.value)} placeholder={`${labelField.name} contains…`} />
        </Row>
      ) : null}
      <Row label={`Target ${rel.to}`} error={errs.targetId}>
        <select value={target} onChange={(e) => setTarget(e.target.value)} required aria-label={`Target ${rel.to}`}>
          <option value="">—</option>
          {(cands?.items || []).map((r) => (
            <option key={r.id} value={r.id}>
              {labelOf(def, rel.to, r)}
            </option>
          ))}
        </select>
      </Row>
      {props.map((p) => (
        <Row key={p.name} label={p.name} hint={fieldHint(p)} error={errs['properties.' + p.name] || errs[p.name]}>
          <FieldInput f={p} value={values[p.name] ?? ''} onChange={(v) => setValues((s) => ({ ...s, [p.name]: v }))} />
        </Row>
      ))}
      <ErrorBox error={error} />
      <button type="submit">Add {rel.name}</button>
    </form>
  );
}
