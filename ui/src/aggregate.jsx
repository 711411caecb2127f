// Aggregate: the records page's second view. The user picks groupBy fields
// (TIMESTAMP and DATE with a bucket), aggregate functions over fields, a
// having over the aliases, an order and a limit; the view sends one
// POST /dynamic/{Entity}/aggregate (with the records view's filter as its
// where), shows the groups as a table and the request to copy, with the
// same question as GraphQL's <plural>Aggregate when it has one. Field
// inputs suggest what the API takes for each function but accept any name:
// the API is the judge, and its errors are shown beside the row they name.
import { useState } from 'react';
import { api, ApiError, enc, errorAt } from './api.js';
import { Empty, ErrorBox, fmtTime, useLoad } from './ui.jsx';

export const FUNCS = ['count', 'countDistinct', 'sum', 'avg', 'min', 'max'];
const BUCKETS = ['hour', 'day', 'week', 'month'];
const HAVING_OPS = ['$eq', '$neq', '$gt', '$gte', '$lt', '$lte', '$in', '$notIn', '$isNull'];
const TIMESTAMPS = [
  { name: 'createdAt', type: 'TIMESTAMP' },
  { name: 'updatedAt', type: 'TIMESTAMP' },
];
const SORTABLE = ['STRING', 'TEXT', 'ENUM', 'INTEGER', 'NUMBER', 'TIMESTAMP', 'DATE'];
const UNGROUPABLE = ['JSON', 'VECTOR', 'FILE'];

const scalar = (f) => !f.list && !UNGROUPABLE.includes(f.type);

// takes lists the fields a function accepts (docs/rest.md, Aggregates), as
// suggestions; an unknown schema (no schema:read) suggests nothing.
export function takes(fields, fn) {
  if (!fields) return fn === 'count' ? ['*'] : [];
  const all = [...fields, ...TIMESTAMPS];
  switch (fn) {
    case 'count':
      return ['*', ...all.filter(scalar).map((f) => f.name)];
    case 'countDistinct':
      return all.filter(scalar).map((f) => f.name);
    case 'sum':
    case 'avg':
      return fields.filter((f) => !f.list && (f.type === 'INTEGER' || f.type === 'NUMBER')).map((f) => f.name);
    default:
      return all.filter((f) => !f.list && SORTABLE.includes(f.type)).map((f) => f.name);
  }
}

export function groupable(fields) {
  return fields ? [...fields, ...TIMESTAMPS].filter(scalar) : [];
}

// autoAlias names a measure after its function and field: count, sumPrice.
export function autoAlias(fn, field) {
  if (!field || field === '*') return fn;
  return fn + field.charAt(0).toUpperCase() + field.slice(1).replace(/[^A-Za-z0-9_]/g, '_');
}

// literal reads a having value: a number, true/false, null, else the text.
function literal(s) {
  const t = s.trim();
  if (t === 'true' || t === 'false') return t === 'true';
  if (t === 'null') return null;
  if (t !== '' && !isNaN(Number(t))) return Number(t);
  return s;
}

// buildAggregate turns the view's rows into the request body.
export function buildAggregate({ where, groupBy, measures, having, orderBy, dir, limit }) {
  const body = {};
  if (where) body.where = where;
  const keys = groupBy.filter((g) => g.field.trim());
  if (keys.length) body.groupBy = keys.map((g) => (g.bucket ? { field: g.field.trim(), bucket: g.bucket } : g.field.trim()));
  body.aggregates = {};
  for (const m of measures) {
    if (!m.field.trim()) continue;
    body.aggregates[m.alias] = { [m.fn]: m.field.trim() };
  }
  const conds = having
    .filter((h) => h.alias.trim() && (h.op === '$isNull' || h.value.trim() !== ''))
    .map((h) => {
      let v;
      if (h.op === '$isNull') v = h.value.trim() !== 'false';
      else if (h.op === '$in' || h.op === '$notIn')
        v = h.value
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
          .map(literal);
      else v = literal(h.value);
      return { [h.alias.trim()]: { [h.op]: v } };
    });
  if (conds.length === 1) body.having = conds[0];
  else if (conds.length > 1) body.having = { $and: conds };
  if (orderBy) body.orderBy = [{ field: orderBy, direction: dir }];
  const n = Number(limit);
  if (limit !== '' && n !== 50) body.limit = isNaN(n) ? limit : n;
  return body;
}

export function Aggregate({ me, ent, where }) {
  const fields = ent.fields;
  const { data: gqlRoot } = useLoad((signal) => aggregateRoot(me.tenantId, ent.name, signal), [me.tenantId, ent.name]);
  const [groupBy, setGroupBy] = useState([]);
  const [measures, setMeasures] = useState([{ fn: 'count', field: '*', alias: 'count', edited: false }]);
  const [having, setHaving] = useState([]);
  const [orderBy, setOrderBy] = useState('');
  const [dir, setDir] = useState('ASC');
  const [limit, setLimit] = useState('50');
  const [result, setResult] = useState(null); // {body, groups}
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const [copied, setCopied] = useState(false);
  const body = buildAggregate({ where, groupBy, measures, having, orderBy, dir, limit });
  const errs = error instanceof ApiError ? error.fieldErrors() : {};
  const aliases = measures.filter((m) => m.field.trim()).map((m) => m.alias);
  const keyNames = groupBy.filter((g) => g.field.trim()).map((g) => g.field.trim());
  const fieldOf = (name) => (fields ? [...fields, ...TIMESTAMPS].find((f) => f.name === name) : undefined);
  const edit = (set, i, patch) => set((rows) => rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  const editMeasure = (i, patch) =>
    setMeasures((rows) =>
      rows.map((m, j) => {
        if (j !== i) return m;
        const n = { ...m, ...patch };
        if ('alias' in patch) n.edited = true;
        else if (!n.edited) n.alias = uniqueAlias(rows.filter((_, k) => k !== i), autoAlias(n.fn, n.field.trim()));
        return n;
      }),
    );
  const request = `POST /api/v1/dynamic/${ent.name}/aggregate\n${JSON.stringify(body, null, 2)}`;
  const gql = gqlRoot ? toGraphQL(gqlRoot, fields, body) : null;

  async function run(e) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const out = await api.post(`/dynamic/${enc(ent.name)}/aggregate`, body);
      setResult({ body, groups: out.groups });
    } catch (x) {
      setError(x);
      setResult(null);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="card aggregate" aria-label={`Aggregate ${ent.name}`} onSubmit={run}>
      <p className="meta">
        {where ? 'Over the records the filter above matches.' : 'Over every record (the filter above narrows it).'} Full-text search does not apply.
      </p>

      <fieldset className="agg-part" aria-label="Group by">
        <legend>Group by</legend>
        <datalist id="agg-groupable">
          {groupable(fields).map((f) => (
            <option key={f.name} value={f.name} />
          ))}
        </datalist>
        {groupBy.map((g, i) => {
          const f = fieldOf(g.field.trim());
          const err = errorAt(errs, `groupBy[${i}]`);
          return (
            <div className={'agg-row' + (err ? ' invalid' : '')} key={i}>
              <input aria-label={`Group by field ${i + 1}`} list="agg-groupable" value={g.field} placeholder="field" onChange={(e) => edit(setGroupBy, i, { field: e.target.value })} />
              {!f || f.type === 'TIMESTAMP' || f.type === 'DATE' ? (
                <select aria-label={`Bucket ${i + 1}`} value={g.bucket} onChange={(e) => edit(setGroupBy, i, { bucket: e.target.value })}>
                  <option value="">exact value</option>
                  {BUCKETS.map((b) => (
                    <option key={b} value={b}>
                      by {b}
                    </option>
                  ))}
                </select>
              ) : null}
              <button type="button" className="small danger" aria-label={`Remove group key ${i + 1}`} onClick={() => setGroupBy((rows) => rows.filter((_, j) => j !== i))}>
                ✕
              </button>
              {err ? (
                <span className="field-error" role="alert">
                  groupBy[{i}]: {err}
                </span>
              ) : null}
            </div>
          );
        })}
        <button type="button" className="small" onClick={() => setGroupBy((rows) => [...rows, { field: '', bucket: '' }])}>
          Add group key
        </button>
      </fieldset>

      <fieldset className="agg-part" aria-label="Aggregates">
        <legend>Aggregates</legend>
        {FUNCS.map((fn) => (
          <datalist id={`agg-takes-${fn}`} key={fn}>
            {takes(fields, fn).map((n) => (
              <option key={n} value={n} />
            ))}
          </datalist>
        ))}
        {measures.map((m, i) => {
          const err = m.alias ? errorAt(errs, `aggregates.${m.alias}`) : undefined;
          return (
            <div className={'agg-row' + (err ? ' invalid' : '')} key={i}>
              <select aria-label={`Function ${i + 1}`} value={m.fn} onChange={(e) => editMeasure(i, { fn: e.target.value, field: e.target.value === 'count' ? m.field : m.field === '*' ? '' : m.field })}>
                {FUNCS.map((fn) => (
                  <option key={fn}>{fn}</option>
                ))}
              </select>
              <span>of</span>
              <input aria-label={`Aggregate field ${i + 1}`} list={`agg-takes-${m.fn}`} value={m.field} placeholder={m.fn === 'count' ? '* or field' : 'field'} onChange={(e) => editMeasure(i, { field: e.target.value })} />
              <span>as</span>
              <input aria-label={`Alias ${i + 1}`} value={m.alias} onChange={(e) => editMeasure(i, { alias: e.target.value })} />
              <button type="button" className="small danger" aria-label={`Remove aggregate ${i + 1}`} onClick={() => setMeasures((rows) => rows.filter((_, j) => j !== i))}>
                ✕
              </button>
              {err ? (
                <span className="field-error" role="alert">
                  {Object.keys(errs).find((k) => k === `aggregates.${m.alias}` || k.startsWith(`aggregates.${m.alias}.`))}: {err}
                </span>
              ) : null}
            </div>
          );
        })}
        <button type="button" className="small" onClick={() => setMeasures((rows) => [...rows, { fn: 'count', field: '*', alias: uniqueAlias(rows, 'count'), edited: false }])}>
          Add aggregate
        </button>
      </fieldset>

      <fieldset className="agg-part" aria-label="Having">
        <legend>Having</legend>
        <datalist id="agg-aliases">
          {aliases.map((a) => (
            <option key={a} value={a} />
          ))}
        </datalist>
        {having.map((h, i) => {
          const err = h.alias.trim() ? errorAt(errs, `having.${h.alias.trim()}`) : undefined;
          return (
            <div className={'agg-row' + (err ? ' invalid' : '')} key={i}>
              <input aria-label={`Having alias ${i + 1}`} list="agg-aliases" value={h.alias} placeholder="alias" onChange={(e) => edit(setHaving, i, { alias: e.target.value })} />
              <select aria-label={`Having operator ${i + 1}`} value={h.op} onChange={(e) => edit(setHaving, i, { op: e.target.value })}>
                {HAVING_OPS.map((o) => (
                  <option key={o}>{o}</option>
                ))}
              </select>
              <input aria-label={`Having value ${i + 1}`} value={h.value} placeholder={h.op.endsWith('In') ? 'a, b, c' : h.op === '$isNull' ? 'true' : 'value'} onChange={(e) => edit(setHaving, i, { value: e.target.value })} />
              <button type="button" className="small danger" aria-label={`Remove having ${i + 1}`} onClick={() => setHaving((rows) => rows.filter((_, j) => j !== i))}>
                ✕
              </button>
              {err ? (
                <span className="field-error" role="alert">
                  having.{h.alias.trim()}: {err}
                </span>
              ) : null}
            </div>
          );
        })}
        <button type="button" className="small" onClick={() => setHaving((rows) => [...rows, { alias: aliases[0] || '', op: '$gte', value: '' }])}>
          Add having condition
        </button>
      </fieldset>

      <div className="actions">
        <label className="check">
          Order by
          <select aria-label="Order groups by" value={orderBy} onChange={(e) => setOrderBy(e.target.value)}>
            <option value="">group keys</option>
            {[...keyNames, ...aliases].map((n) => (
              <option key={n}>{n}</option>
            ))}
          </select>
        </label>
        <select aria-label="Order direction" value={dir} onChange={(e) => setDir(e.target.value)} disabled={!orderBy}>
          <option value="ASC">ascending</option>
          <option value="DESC">descending</option>
        </select>
        <label className="check">
          Limit
          <input aria-label="Group limit" type="number" min="1" max="1000" value={limit} onChange={(e) => setLimit(e.target.value)} style={{ width: 80 }} />
        </label>
        <button type="submit" disabled={busy}>
          Run aggregate
        </button>
      </div>

      <details className="agg-request">
        <summary>Request</summary>
        <pre className="dsl" aria-label="Aggregate request">
          {request}
        </pre>
        <button
          type="button"
          className="small"
          onClick={async () => {
            try {
              await navigator.clipboard.writeText(request);
              setCopied(true);
            } catch {
              setCopied(false);
            }
          }}
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
        {gql ? (
          gql.query ? (
            <>
              <p className="meta">The same groups from GraphQL (POST /api/v1/dynamic-gql/{me.tenantId}; it names each aggregate by its function and field):</p>
              <pre className="dsl" aria-label="GraphQL aggregate query">
                {gql.query}
              </pre>
            </>
          ) : (
            <p className="meta" aria-label="GraphQL aggregate query">
              No GraphQL form: {gql.error}
            </p>
          )
        ) : null}
      </details>

      <ErrorBox error={error} />
      {result ? <AggregateTable result={result} /> : null}
    </form>
  );
}

// uniqueAlias is base, or base2, base3... when another row has it.
function uniqueAlias(rows, base) {
  const used = new Set(rows.map((r) => r.alias));
  if (!used.has(base)) return base;
  for (let n = 2; ; n++) if (!used.has(base + n)) return base + n;
}

function AggregateTable({ result }) {
  const { body, groups } = result;
  const keys = (body.groupBy || []).map((g) => (typeof g === 'string' ? { field: g } : g));
  const aliases = Object.keys(body.aggregates || {});
  if (groups.length === 0) return <Empty>No group matches.</Empty>;
  return (
    <div className="table-wrap">
      <table className="grid" aria-label="Aggregate result">
        <thead>
          <tr>
            {keys.map((k) => (
              <th key={'k' + k.field}>{k.bucket ? `${k.field} (${k.bucket})` : k.field}</th>
            ))}
            {aliases.map((a) => (
              <th key={'a' + a}>{a}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {groups.map((g, i) => (
            <tr key={i}>
              {keys.map((k) => (
                <td key={'k' + k.field}>{value(g.key?.[k.field])}</td>
              ))}
              {aliases.map((a) => (
                <td key={'a' + a} className="num">
                  {value(g[a])}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      <p className="meta" aria-live="polite">
        {groups.length} {groups.length === 1 ? 'group' : 'groups'}
      </p>
    </div>
  );
}

function value(v) {
  if (v === null || v === undefined) return <span className="null">null</span>;
  if (typeof v === 'string' && /^\d{4}-\d\d-\d\dT/.test(v)) return fmtTime(v);
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

// aggregateRoot finds the GraphQL root field aggregating entity (its
// plural is the server's; the console does not pluralise): null when the
// credential reaches no GraphQL schema holding one.
async function aggregateRoot(tenantId, entity, signal) {
  if (!tenantId) return null;
  try {
    const out = await api.post(`/dynamic-gql/${enc(tenantId)}`, { query: '{ __schema { queryType { fields { name type { name ofType { name } } } } } }' }, { signal });
    const f = (out?.data?.__schema?.queryType?.fields || []).find((x) => x.name.endsWith('Aggregate') && (x.type?.ofType?.name || x.type?.name) === entity + 'Aggregate');
    return f ? f.name : null;
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    return null;
  }
}

const GQL_OPS = { $eq: 'equals', $neq: 'not', $gt: 'gt', $gte: 'gte', $lt: 'lt', $lte: 'lte', $in: 'in', $notIn: 'notIn', $contains: 'contains', $startsWith: 'startsWith', $endsWith: 'endsWith', $isNull: 'isNull' };

class NoForm extends Error {}

// gqlValue writes v as a GraphQL literal; an ENUM field's values are enum
// names, unquoted.
function gqlValue(v, isEnum) {
  if (Array.isArray(v)) return '[' + v.map((x) => gqlValue(x, isEnum)).join(', ') + ']';
  if (v === null) return 'null';
  if (typeof v === 'string') return isEnum && /^[A-Za-z_][A-Za-z0-9_]*$/.test(v) ? v : JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw new NoForm('a JSON value in a condition');
}

// gqlFilter translates a where (or having, through name) of the query DSL
// into GraphQL's filter input. name maps a condition's name to the path of
// inputs it sits under and whether its values are enum names.
function gqlFilter(f, name) {
  const parts = [];
  for (const [k, v] of Object.entries(f)) {
    if (k === '$and' || k === '$or') parts.push(`${k === '$and' ? 'AND' : 'OR'}: [${v.map((x) => gqlFilter(x, name)).join(', ')}]`);
    else if (k === '$not') parts.push(`NOT: ${gqlFilter(v, name)}`);
    else {
      const { path, isEnum } = name(k);
      const ops = v !== null && typeof v === 'object' && !Array.isArray(v) ? v : { $eq: v };
      const conds = Object.entries(ops).map(([op, x]) => {
        if (!GQL_OPS[op]) throw new NoForm(`operator ${op}`);
        return `${GQL_OPS[op]}: ${gqlValue(x, isEnum && op !== '$isNull')}`;
      });
      let inner = `{${conds.join(', ')}}`;
      for (let i = path.length - 1; i >= 0; i--) inner = `{${path[i]}: ${inner}}`;
      parts.push(inner.slice(1, -1));
    }
  }
  return `{${parts.join(', ')}}`;
}

// toGraphQL renders an aggregate request as GraphQL's root field root:
// {query} or {error} saying why it has no GraphQL form (GraphQL names an
// aggregate by function and field, so count of a field, which skips
// nulls, and a function over the same field twice have none).
export function toGraphQL(root, fields, body) {
  try {
    const typeOf = (n) => (fields || []).find((f) => f.name === n)?.type;
    const byAlias = {};
    const sel = {}; // function → fields
    let count = false;
    for (const [alias, spec] of Object.entries(body.aggregates || {})) {
      const [fn, field] = Object.entries(spec)[0];
      if (fn === 'count' && field !== '*') throw new NoForm('count of a field (GraphQL counts records; countDistinct counts values)');
      if (fn === 'count') {
        if (count) throw new NoForm('count twice');
        count = true;
        byAlias[alias] = { path: ['count'], order: 'count' };
        continue;
      }
      sel[fn] = sel[fn] || [];
      if (sel[fn].includes(field)) throw new NoForm(`${fn} of ${field} twice`);
      sel[fn].push(field);
      byAlias[alias] = { path: [fn, field], order: `${fn}.${field}`, isEnum: (fn === 'min' || fn === 'max') && typeOf(field) === 'ENUM' };
    }
    const members = [count ? 'count' : '', ...Object.entries(sel).map(([fn, fs]) => `${fn} { ${fs.join(' ')} }`)].filter(Boolean).join(' ');
    const args = [];
    if (body.where) args.push(`where: ${gqlFilter(body.where, (k) => ({ path: [k], isEnum: typeOf(k) === 'ENUM' }))}`);
    const keys = (body.groupBy || []).map((g) => (typeof g === 'string' ? { field: g } : g));
    if (keys.length === 0) {
      if (body.having || body.orderBy) throw new NoForm('having or order without groupBy');
      return { query: `{ ${root}${args.length ? `(${args.join(', ')})` : ''} { ${members} } }` };
    }
    args.push(`groupBy: [${keys.map((k) => JSON.stringify(k.field)).join(', ')}]`);
    const buckets = keys.filter((k) => k.bucket);
    if (buckets.length) args.push(`buckets: [${buckets.map((k) => `{field: ${JSON.stringify(k.field)}, unit: ${k.bucket}}`).join(', ')}]`);
    const gargs = [];
    if (body.having)
      gargs.push(
        `having: ${gqlFilter(body.having, (a) => {
          if (!byAlias[a]) throw new NoForm(`having names ${a}, no aggregate`);
          return byAlias[a];
        })}`,
      );
    if (body.orderBy)
      gargs.push(
        `orderBy: [${body.orderBy
          .map((o) => `{field: ${JSON.stringify(byAlias[o.field] ? byAlias[o.field].order : o.field === 'count' ? 'key.count' : o.field)}, direction: ${o.direction || 'ASC'}}`)
          .join(', ')}]`,
      );
    if (body.limit !== undefined) gargs.push(`limit: ${Number(body.limit)}`);
    return {
      query: `{ ${root}(${args.join(', ')}) {\n    groups${gargs.length ? `(${gargs.join(', ')})` : ''} {\n      key { ${keys.map((k) => k.field).join(' ')} } ${members} } } }`,
    };
  } catch (e) {
    if (e instanceof NoForm) return { error: e.message };
    throw e;
  }
}
