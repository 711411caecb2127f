// Events: recent events of the change feed (GET /api/v1/events), oldest
// first from a time or after a cursor, filtered by entity and type, one page
// at a time ("Load more" asks for the events after the last one shown).
import { useState } from 'react';
import { api, ApiError, enc } from './api.js';
import { ErrorBox, fmtTime, Link, ListTable, Row } from './ui.jsx';

const TYPES = ['entity.created', 'entity.updated', 'entity.deleted', 'relationship.created', 'relationship.updated', 'relationship.deleted'];
const PAGE = 50;

function localInput(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function Events() {
  const [since, setSince] = useState(() => localInput(new Date(Date.now() - 3600e3)));
  const [after, setAfter] = useState('');
  const [entities, setEntities] = useState('');
  const [types, setTypes] = useState([]);
  const [events, setEvents] = useState(null);
  const [cursor, setCursor] = useState('');
  const [last, setLast] = useState(0);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);

  async function load(from, append) {
    setBusy(true);
    setError(null);
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (from.after) q.set('after', from.after);
    else if (from.since) q.set('since', new Date(from.since).toISOString());
    const names = entities
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (names.length) q.set('entities', names.join(','));
    if (types.length) q.set('types', types.join(','));
    try {
      const page = await api.get('/events?' + q.toString());
      setEvents((old) => (append && old ? [...old, ...page.events] : page.events));
      setCursor(page.nextCursor || from.after || '');
      setLast(page.events.length);
    } catch (x) {
      setError(x);
    } finally {
      setBusy(false);
    }
  }
  const errs = error instanceof ApiError ? error.fieldErrors() : {};
  return (
    <section>
      <div className="toolbar">
        <h1>Events</h1>
      </div>
      <form
        className="card"
        aria-label="Event filters"
        onSubmit={(e) => {
          e.preventDefault();
          load({ after: after.trim(), since }, false);
        }}
      >
        <Row label="Since" error={errs.since} hint="the first event written at or after this time">
          <input type="datetime-local" step="1" name="since" value={since} onChange={(e) => setSince(e.target.value)} disabled={!!after.trim()} />
        </Row>
        <Row label="After cursor" error={errs.after} hint="an event id; instead of since">
          <input name="after" value={after} onChange={(e) => setAfter(e.target.value)} placeholder="event id" />
        </Row>
        <Row label="Entities" error={errs.entities} hint="comma-separated entity or relationship names; empty = all you may read">
          <input name="entities" value={entities} onChange={(e) => setEntities(e.target.value)} />
        </Row>
        <fieldset className="checks">
          <legend>Types (none = all)</legend>
          {TYPES.map((t) => (
            <label key={t} className="check">
              <input type="checkbox" checked={types.includes(t)} onChange={(e) => setTypes((s) => (e.target.checked ? [...s, t] : s.filter((x) => x !== t)))} /> {t}
            </label>
          ))}
          {errs.types ? <span className="field-error">{errs.types}</span> : null}
        </fieldset>
        <ErrorBox error={error} hideFields />
        <div className="actions">
          <button type="submit" disabled={busy}>
            Show events
          </button>
        </div>
      </form>
      <ListTable label="Events" items={events} empty="No events in this range yet." head={['Time', 'Type', 'Entity', 'Subject', 'Record', 'Cursor']}>
        {(ev) => (
          <tr key={ev.id}>
            <td>{fmtTime(ev.timestamp)}</td>
            <td>{ev.type}</td>
            <td>{ev.entityName}</td>
            <td>
              {ev.type.startsWith('entity.') && ev.type !== 'entity.deleted' ? (
                <Link to={`/records/${enc(ev.entityName)}/${enc(ev.entityId)}`}>{ev.entityId}</Link>
              ) : (
                <code>{ev.entityId}</code>
              )}
            </td>
            <td>
              <details>
                <summary>record</summary>
                <pre>{JSON.stringify(ev.record, null, 2)}</pre>
              </details>
            </td>
            <td>
              <code>{ev.id}</code>
            </td>
          </tr>
        )}
      </ListTable>
      {events ? (
        <div className="actions">
          <button type="button" disabled={busy || !cursor} onClick={() => load({ after: cursor }, true)}>
            Load more
          </button>
          <span className="meta">
            {events.length} event{events.length === 1 ? '' : 's'} shown{last < PAGE ? ' · that is all so far; new events appear with Load more' : ''}
          </span>
        </div>
      ) : null}
    </section>
  );
}
