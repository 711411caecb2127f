// A record's lifecycle in the console: its history (entity option
// history: the versions, newest first, a page at a time through the
// API's cursor, each with its write, time, key and changed fields, and the
// record as it was) and, for a soft-deleted record (entity option
// softDelete), the banner that says so with its Restore button.
import { useState } from 'react';
import { api, enc } from './api.js';
import { Empty, ErrorBox, fmtTime, useAction } from './ui.jsx';

const PAGE = 20;

export function History({ ent, id }) {
  const base = `/dynamic/${enc(ent.name)}/${enc(id)}/history?limit=${PAGE}`;
  const [pages, setPages] = useState(null); // versions loaded so far
  const [next, setNext] = useState(null);
  const [open, setOpen] = useState(null); // the version whose record is shown
  const [error, act] = useAction();
  const load = (cursor) =>
    act(async () => {
      try {
        const r = await api.get(base + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
        setPages((p) => (cursor && p ? [...p, ...r.items] : r.items));
        setNext(r.nextCursor || null);
      } catch (x) {
        if (x.status === 404) {
          setPages([]); // no version recorded yet
          return;
        }
        throw x;
      }
    });
  return (
    <div className="card" aria-label="History">
      <h2>History</h2>
      <ErrorBox error={error} />
      {pages === null ? (
        <button type="button" onClick={() => load(null)}>
          Show history
        </button>
      ) : pages.length === 0 ? (
        <Empty>No version recorded yet: the record has not been written since history was switched on.</Empty>
      ) : (
        <table className="grid compact" aria-label="Versions">
          <thead>
            <tr>
              <th>When</th>
              <th>Write</th>
              <th>By</th>
              <th>Changed</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {pages.map((v) => (
              <tr key={v.id}>
                <td>{fmtTime(v.at)}</td>
                <td>{v.op}</td>
                <td className="meta">{v.userId ? 'user ' + v.userId : v.keyId ? 'key ' + v.keyId : '—'}</td>
                <td>{v.changed.join(', ') || '—'}</td>
                <td>
                  <button type="button" className="small" aria-expanded={open === v.id} onClick={() => setOpen(open === v.id ? null : v.id)}>
                    {open === v.id ? 'Hide' : 'Record'}
                  </button>
                  {open === v.id ? <pre aria-label={`Record at version ${v.id}`}>{JSON.stringify(v.record, null, 2)}</pre> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {next ? (
        <div className="pager">
          <button type="button" onClick={() => load(next)}>
            Older versions →
          </button>
        </div>
      ) : null}
    </div>
  );
}

// Deleted is the banner of a soft-deleted record, with Restore for a
// credential that may delete (and so restore) it.
export function Deleted({ ent, record, canRestore, onRestored }) {
  const [error, act] = useAction();
  return (
    <div className="error" role="status" aria-label="Deleted record">
      This {ent.name} was deleted {fmtTime(record.deletedAt)}; reads hide it.{' '}
      {canRestore ? (
        <button
          type="button"
          onClick={() =>
            act(async () => {
              const r = await api.post(`/dynamic/${enc(ent.name)}/${enc(record.id)}/restore`);
              onRestored(r);
            })
          }
        >
          Restore
        </button>
      ) : null}
      <ErrorBox error={error} />
    </div>
  );
}
