// Events: recent events of the change feed (GET /api/v1/events), oldest
// first from a time or after a cursor, filtered by entity and type, one page
// at a time ("Load more" asks for the events after the last one shown), and
// a live tail: the same feed as Server-Sent Events, appended as they come.
//
// The tail is the eventsource package's EventSource (the WHATWG one, which
// lets us send the credential: a browser's own EventSource cannot set
// headers). It starts after the last event shown (or, with none shown, at
// the newest event) and always resumes after the last event it received:
// the cursor goes as Last-Event-ID, when the library reconnects by itself
// after a dropped connection and when the tail is resumed or started again.
import { EventSource } from 'eventsource';
import { useEffect, useRef, useState } from 'react';
import { api, ApiError, credential, enc, viewAsCredential } from './api.js';
import { ErrorBox, fmtTime, Link, ListTable, Row } from './ui.jsx';

const TYPES = ['entity.created', 'entity.updated', 'entity.deleted', 'relationship.created', 'relationship.updated', 'relationship.deleted'];
const PAGE = 50;
// LIVE_ROWS bounds the rows kept while tailing (the oldest go first);
// HOLD_MAX bounds the events held while paused: past it the stream is
// closed, and resuming reads the rest from the last held cursor.
const LIVE_ROWS = 1000;
const HOLD_MAX = 5000;

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
  // The live tail: tail.current holds its stream, last cursor, paused flag
  // and held events; live is what the page shows of it (null: not tailing).
  const tail = useRef(null);
  const [live, setLive] = useState(null);
  useEffect(() => () => tail.current?.es?.close(), []);

  function filterQuery() {
    const q = new URLSearchParams();
    const names = entities
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (names.length) q.set('entities', names.join(','));
    if (types.length) q.set('types', types.join(','));
    return q;
  }

  function appendEvents(evs) {
    setEvents((old) => {
      const next = [...(old || []), ...evs];
      return next.length > LIVE_ROWS ? next.slice(next.length - LIVE_ROWS) : next;
    });
    setCursor(evs[evs.length - 1].id);
  }

  function show(t, state) {
    if (tail.current === t) setLive({ state: t.paused ? 'paused' : state, held: t.held.length });
  }

  // connect opens t's stream after t.last (at the newest event without one).
  function connect(t) {
    const es = new EventSource('/api/v1/events?' + t.query.toString(), {
      fetch: (input, init) =>
        fetch(input, {
          ...init,
          headers: {
            ...init.headers,
            Authorization: 'Bearer ' + (viewAsCredential.get() || credential.get()),
            ...(t.last ? { 'Last-Event-ID': t.last } : {}),
          },
        }),
    });
    t.es = es;
    es.onopen = () => show(t, 'live');
    es.onmessage = (m) => {
      if (tail.current !== t) return;
      t.last = m.lastEventId;
      const ev = JSON.parse(m.data);
      if (!t.paused) {
        appendEvents([ev]);
        return;
      }
      t.held.push(ev);
      if (t.held.length >= HOLD_MAX) {
        es.close(); // resume reads on from t.last
        t.es = null;
      }
      show(t, 'live');
    };
    es.onerror = (err) => {
      if (tail.current !== t) return;
      if (es.readyState !== EventSource.CLOSED) {
        show(t, 'reconnecting'); // the library retries with Last-Event-ID
        return;
      }
      // Refused (the credential ended, the cursor was pruned: 410): the
      // same read as JSON says why, in the API's words.
      stopTail();
      const q = new URLSearchParams(t.query);
      q.set('limit', '1');
      if (t.last) q.set('after', t.last);
      api
        .get('/events?' + q.toString())
        .then(() => setError(new Error(`The live tail stopped: ${err?.message || 'HTTP ' + (err?.code ?? 'error')}.`)))
        .catch(setError);
    };
  }

  function startTail() {
    setError(null);
    const t = { query: filterQuery(), last: events ? cursor : '', paused: false, held: [], es: null };
    if (!events) setEvents([]);
    tail.current = t;
    setLive({ state: 'connecting', held: 0 });
    connect(t);
  }

  function stopTail() {
    const t = tail.current;
    if (!t) return;
    t.es?.close();
    tail.current = null;
    if (t.held.length) appendEvents(t.held);
    setLive(null);
  }

  function pauseTail() {
    const t = tail.current;
    t.paused = true;
    show(t, 'live');
  }

  function resumeTail() {
    const t = tail.current;
    t.paused = false;
    if (t.held.length) appendEvents(t.held);
    t.held = [];
    if (t.es) show(t, 'live');
    else {
      setLive({ state: 'connecting', held: 0 });
      connect(t);
    }
  }

  async function load(from, append) {
    setBusy(true);
    setError(null);
    const q = filterQuery();
    q.set('limit', String(PAGE));
    if (from.after) q.set('after', from.after);
    else if (from.since) q.set('since', new Date(from.since).toISOString());
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
          stopTail();
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
          {live ? (
            <button type="button" onClick={stopTail}>
              Stop live tail
            </button>
          ) : (
            <button type="button" disabled={busy} onClick={startTail} title="Follow new events as they are written, after the last one shown">
              Live tail
            </button>
          )}
        </div>
      </form>
      {live ? (
        <div className="actions">
          <p role="status" aria-label="Live tail" className="meta">
            {live.state === 'connecting'
              ? 'Connecting…'
              : live.state === 'reconnecting'
                ? 'Connection lost: reconnecting after the last event received…'
                : live.state === 'paused'
                  ? `Paused: ${live.held} new event${live.held === 1 ? '' : 's'} held`
                  : 'Live: new events appear below as they are written'}
          </p>
          {live.state === 'paused' ? (
            <button type="button" onClick={resumeTail}>
              Resume
            </button>
          ) : (
            <button type="button" onClick={pauseTail}>
              Pause
            </button>
          )}
        </div>
      ) : null}
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
          <button type="button" disabled={busy || !cursor || !!live} onClick={() => load({ after: cursor }, true)}>
            Load more
          </button>
          <span className="meta">
            {events.length} event{events.length === 1 ? '' : 's'} shown
            {live ? (events.length >= LIVE_ROWS ? ` (the newest ${LIVE_ROWS})` : '') : last < PAGE ? ' · that is all so far; new events appear with Load more or the live tail' : ''}
          </span>
        </div>
      ) : null}
    </section>
  );
}
