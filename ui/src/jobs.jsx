// Jobs: start an import, update or delete job, and follow every job's
// progress live (the list is polled while a job is queued or running);
// cancel, and read a failed job's errors item by item.
import { useEffect, useState } from 'react';
import { allows, anyOf, api, ApiError, enc, errorAt } from './api.js';
import { uploadFile } from './files-api.js';
import { loadActive } from './schemas.jsx';
import { ErrorBox, fmtTime, ListTable, Row, useAction, useLoad } from './ui.jsx';

const PAGE = 50;
const LIVE = ['queued', 'running'];

export function Jobs({ me }) {
  const [offset, setOffset] = useState(0);
  const [status, setStatus] = useState('');
  const { data, error, reload } = useLoad((signal) => api.get(`/jobs?limit=${PAGE}&offset=${offset}${status ? '&status=' + status : ''}`, { signal }), [offset, status]);
  const [actError, act] = useAction();
  const live = data && data.jobs.some((j) => LIVE.includes(j.status));
  useEffect(() => {
    if (!live) return;
    const t = setTimeout(reload, 1000); // live progress while something runs
    return () => clearTimeout(t);
  }, [data, live, reload]);
  return (
    <section>
      <div className="toolbar">
        <h1>Jobs</h1>
        <select aria-label="Job status" value={status} onChange={(e) => (setStatus(e.target.value), setOffset(0))}>
          <option value="">all</option>
          {['queued', 'running', 'succeeded', 'failed', 'cancelled'].map((s) => (
            <option key={s}>{s}</option>
          ))}
        </select>
      </div>
      {allows(me.scopes, 'job', '*', 'create') && anyOf(me.scopes, 'entity', 'read') ? <NewJob me={me} onCreated={reload} /> : null}
      <ErrorBox error={error || actError} />
      <ListTable label="Jobs" items={data && data.jobs} empty="No jobs." head={["Job", "Status", "Progress", "Result", "Created", "Finished", ""]}>
        {(j) => (
              <tr key={j.id}>
                <td>
                  {j.type} {j.entity}
                  <div className="meta">{j.where ? JSON.stringify(j.where) : j.format ? `${j.format} file` : ''}</div>
                </td>
                <td>
                  <span className={'badge ' + (j.status === 'succeeded' ? 'ok' : j.status === 'failed' ? 'bad' : '')}>{j.status}</span>
                </td>
                <td>
                  <progress max={j.progress.total || 1} value={j.progress.total ? j.progress.processed : j.status === 'succeeded' ? 1 : 0} aria-label={`Progress of job ${j.id}`} />{' '}
                  {j.progress.processed}
                  {j.progress.total != null ? ` / ${j.progress.total}` : ''}
                </td>
                <td>
                  {j.result ? `${j.result.successCount} written, ${j.result.failureCount} failed` : '—'}
                  {j.error ? <div className="field-error">{j.error.message}</div> : null}
                  {j.result && j.result.failed && j.result.failed.length ? (
                    <details>
                      <summary>failed items</summary>
                      <ul>
                        {j.result.failed.map((f) => (
                          <li key={f.index}>
                            #{f.index}: {f.error.field ? <code>{f.error.field}</code> : null} {f.error.message}
                          </li>
                        ))}
                      </ul>
                    </details>
                  ) : null}
                </td>
                <td>{fmtTime(j.createdAt)}</td>
                <td>{fmtTime(j.finishedAt)}</td>
                <td>
                  {LIVE.includes(j.status) && allows(me.scopes, 'job', '*', 'create') ? (
                    <button type="button" className="small danger" onClick={() => act(async () => (await api.post('/jobs/' + enc(j.id) + '/cancel'), reload()))}>
                      Cancel
                    </button>
                  ) : null}
                </td>
              </tr>
        )}
      </ListTable>
      {data && (offset > 0 || data.jobs.length === PAGE) ? (
        <div className="pager">
          <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
            ← Previous
          </button>
          <button type="button" disabled={data.jobs.length < PAGE} onClick={() => setOffset(offset + PAGE)}>
            Next →
          </button>
        </div>
      ) : null}
    </section>
  );
}

function parseJSON(text, name) {
  if (!text.trim()) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, { error: { code: 'VALIDATION_ERROR', message: `${name}: not valid JSON`, details: [{ field: name, message: 'not valid JSON' }] } });
  }
}

function NewJob({ me, onCreated }) {
  const canSchema = allows(me.scopes, 'schema', '*', 'read');
  const { data: def } = useLoad((signal) => (canSchema ? loadActive(signal).catch(() => null) : Promise.resolve(null)), [canSchema]);
  const [type, setType] = useState('update');
  const [entity, setEntity] = useState('');
  const [format, setFormat] = useState('ndjson');
  const [file, setFile] = useState(null);
  const [where, setWhere] = useState('');
  const [set, setSet] = useState('');
  const [all, setAll] = useState(false);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const entities = (def?.entities || []).map((e) => e.name);
  const errs = error instanceof ApiError ? error.fieldErrors() : {};
  return (
    <form
      className="card"
      aria-label="New job"
      onSubmit={async (e) => {
        e.preventDefault();
        setError(null);
        setBusy(true);
        try {
          const body = { type, entity };
          if (type === 'import') {
            if (!file) throw new ApiError(400, { error: { code: 'VALIDATION_ERROR', message: 'choose a file', details: [{ field: 'fileId', message: 'choose a file' }] } });
            body.fileId = (await uploadFile(file)).id;
            body.format = format;
          } else {
            body.where = parseJSON(where, 'where') || {};
            if (all) body.all = true;
            if (type === 'update') body.set = parseJSON(set, 'set');
          }
          await api.post('/jobs', body);
          onCreated();
        } catch (x) {
          setError(x);
        } finally {
          setBusy(false);
        }
      }}
    >
      <h2>New job</h2>
      <div className="rel-grid">
        <Row label="Type" error={errs.type}>
          <select name="jobType" value={type} onChange={(e) => setType(e.target.value)}>
            <option value="import">import (NDJSON or CSV file)</option>
            <option value="update">update by filter</option>
            <option value="delete">delete by filter</option>
          </select>
        </Row>
        <Row label="Entity" error={errs.entity}>
          {entities.length ? (
            <select name="jobEntity" value={entity} onChange={(e) => setEntity(e.target.value)} required>
              <option value="">—</option>
              {entities.map((n) => (
                <option key={n}>{n}</option>
              ))}
            </select>
          ) : (
            <input name="jobEntity" value={entity} onChange={(e) => setEntity(e.target.value)} required />
          )}
        </Row>
      </div>
      {type === 'import' ? (
        <div className="rel-grid">
          <Row label="Format" error={errs.format}>
            <select name="jobFormat" value={format} onChange={(e) => setFormat(e.target.value)}>
              <option>ndjson</option>
              <option>csv</option>
            </select>
          </Row>
          <Row label="File" error={errs.fileId}>
            <input type="file" aria-label="Import file" accept=".ndjson,.jsonl,.csv,application/x-ndjson,text/csv" onChange={(e) => setFile(e.target.files[0] || null)} />
          </Row>
        </div>
      ) : (
        <>
          <Row label="Where (query DSL)" error={errorAt(errs, 'where')} hint='e.g. {"status": "draft", "price": {"$lt": 10}}'>
            <textarea name="jobWhere" className="mono" rows={2} value={where} onChange={(e) => setWhere(e.target.value)} />
          </Row>
          <label className="check">
            <input type="checkbox" checked={all} onChange={(e) => setAll(e.target.checked)} /> every record when the filter is empty
          </label>
          {type === 'update' ? (
            <Row label="Set (fields to change)" error={errorAt(errs, 'set')} hint='e.g. {"price": 10}'>
              <textarea name="jobSet" className="mono" rows={2} value={set} onChange={(e) => setSet(e.target.value)} />
            </Row>
          ) : null}
        </>
      )}
      <ErrorBox error={error} hideFields />
      <button type="submit" disabled={busy || !entity}>
        Start job
      </button>
    </form>
  );
}
