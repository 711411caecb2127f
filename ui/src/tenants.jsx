// Tenants: the operator's screen (signed in with DDS_OPERATOR_TOKEN).
// List the tenants, open one (what it holds), delete it after typing its
// name, export it (the job's archive is a download link once it is
// written) and import an archive as a new tenant (its new API keys are
// shown once). Tenant jobs are followed live while one runs.
import { useEffect, useState } from 'react';
import { api, enc } from './api.js';
import { ErrorBox, fmtTime, Link, ListTable, navigate, Secret, useAction, useLoad } from './ui.jsx';

const LIVE = ['queued', 'running'];

export function Tenants({ rest }) {
  if (rest) return <Tenant id={decodeURIComponent(rest)} />;
  return <TenantList />;
}

function TenantList() {
  const [after, setAfter] = useState([]); // the pages before this one
  const cursor = after.length ? after[after.length - 1] : '';
  const { data, error, reload } = useLoad((signal) => api.get('/tenants?limit=50' + (cursor ? '&after=' + enc(cursor) : ''), { signal }), [cursor]);
  return (
    <section>
      <div className="toolbar">
        <h1>Tenants</h1>
      </div>
      <Import onDone={reload} />
      <ErrorBox error={error} />
      <ListTable label="Tenants" items={data && data.tenants} empty="No tenants." head={['Tenant', 'Status', 'Created']}>
        {(t) => (
          <tr key={t.id}>
            <td>
              <Link to={'/tenants/' + enc(t.id)}>{t.name}</Link>
              <div className="meta">
                <code>{t.id}</code>
              </div>
            </td>
            <td>
              <span className={'badge ' + (t.status === 'active' ? 'ok' : 'bad')}>{t.status}</span>
            </td>
            <td>{fmtTime(t.createdAt)}</td>
          </tr>
        )}
      </ListTable>
      <div className="pager">
        {after.length ? (
          <button type="button" onClick={() => setAfter(after.slice(0, -1))}>
            Previous
          </button>
        ) : null}
        {data && data.nextAfter ? (
          <button type="button" onClick={() => setAfter([...after, data.nextAfter])}>
            Next
          </button>
        ) : null}
      </div>
    </section>
  );
}

// useJob follows a tenant job until it ends.
function useJob(id) {
  const { data, error, reload } = useLoad((signal) => (id ? api.get('/tenant-jobs/' + enc(id), { signal }) : Promise.resolve(null)), [id]);
  useEffect(() => {
    if (!data || !LIVE.includes(data.status)) return;
    const t = setTimeout(reload, 500);
    return () => clearTimeout(t);
  }, [data, reload]);
  return { job: data, error };
}

function JobStatus({ job }) {
  if (!job) return null;
  const p = job.progress || {};
  return (
    <div className="job" role="status" aria-label={`Tenant job ${job.type}`}>
      {job.type} <span className={'badge ' + (job.status === 'succeeded' ? 'ok' : job.status === 'failed' ? 'bad' : '')}>{job.status}</span>
      {job.step ? <span className="meta"> {job.step}</span> : null}{' '}
      <progress max={p.total || 1} value={p.total ? p.processed : job.status === 'succeeded' ? 1 : 0} aria-label={`Progress of ${job.type}`} />
      {job.error ? <div className="field-error">{job.error.message}</div> : null}
    </div>
  );
}

function Tenant({ id }) {
  const { data: t, error, reload } = useLoad((signal) => api.get('/tenants/' + enc(id), { signal }), [id]);
  const [exportID, setExportID] = useState('');
  const [deleteID, setDeleteID] = useState('');
  const [confirm, setConfirm] = useState('');
  const [actError, act] = useAction();
  const exp = useJob(exportID);
  const del = useJob(deleteID);
  const done = del.job && del.job.status === 'succeeded';
  useEffect(() => {
    // A failed delete leaves the tenant: show it as it is now (a tenant
    // that is gone is not asked for again).
    if (del.job && del.job.status === 'failed') reload();
  }, [del.job, reload]);
  const archive = exp.job && exp.job.status === 'succeeded' && exp.job.result && exp.job.result.archive;
  return (
    <section>
      <div className="toolbar">
        <h1>
          <Link to="/tenants">Tenants</Link> / {t ? t.name : id}
        </h1>
      </div>
      <ErrorBox error={error || actError || exp.error || del.error} />
      {t ? (
        <dl className="facts">
          <dt>ID</dt>
          <dd>
            <code>{t.id}</code>
          </dd>
          <dt>Status</dt>
          <dd>{t.status}</dd>
          <dt>Created</dt>
          <dd>{fmtTime(t.createdAt)}</dd>
          {['schemas', 'apiKeys', 'webhooks', 'files'].map((k) => (
            <span key={k}>
              <dt>{{ schemas: 'Schemas', apiKeys: 'API keys', webhooks: 'Webhooks', files: 'Files' }[k]}</dt>
              <dd data-testid={'count-' + k}>{t[k] ?? 0}</dd>
            </span>
          ))}
        </dl>
      ) : null}
      {t && t.status === 'active' && !deleteID ? (
        <>
          <h2>Export</h2>
          <p>Writes one archive of everything the tenant holds (schemas, records, files, keys and webhooks without their secrets).</p>
          <button type="button" disabled={exp.job && LIVE.includes(exp.job.status)} onClick={() => act(async () => setExportID((await api.post('/tenants/' + enc(id) + '/export')).id))}>
            Export
          </button>
          <JobStatus job={exp.job} />
          {archive ? (
            <p>
              <a href={archive.downloadUrl} download={`tenant-${id}.zip`} rel="noopener">
                Download the archive
              </a>{' '}
              ({archive.sizeBytes} bytes)
            </p>
          ) : null}
          <h2>Delete</h2>
          <form
            onSubmit={(e) => {
              e.preventDefault();
              act(async () => setDeleteID((await api.del('/tenants/' + enc(id))).id));
            }}
          >
            <p>
              Deletes the tenant&apos;s schemas and records, keys, webhooks, events, jobs and stored files. Its credentials stop working at once. This cannot be
              undone. Type the tenant&apos;s name, <code>{t.name}</code>, to confirm.
            </p>
            <input aria-label="Tenant name to confirm" value={confirm} onChange={(e) => setConfirm(e.target.value)} autoComplete="off" />{' '}
            <button type="submit" className="danger" disabled={confirm !== t.name}>
              Delete tenant
            </button>
          </form>
        </>
      ) : null}
      <JobStatus job={del.job} />
      {done ? (
        <p role="status">
          The tenant is deleted. <Link to="/tenants">Back to the tenants</Link>
        </p>
      ) : null}
    </section>
  );
}

// Import uploads an archive (to a presigned URL) and imports it as a new
// tenant; the new tenant's keys are shown once.
function Import({ onDone }) {
  const [file, setFile] = useState(null);
  const [jobID, setJobID] = useState('');
  const [busy, setBusy] = useState(false);
  const [seen, setSeen] = useState(false);
  const [actError, act] = useAction();
  const { job, error } = useJob(jobID);
  useEffect(() => {
    if (job && job.status === 'succeeded') onDone();
  }, [job, onDone]);
  const keys = job && job.status === 'succeeded' && job.result && job.result.apiKeys;
  return (
    <details className="panel">
      <summary>Import a tenant archive</summary>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          act(async () => {
            setBusy(true);
            try {
              const up = await api.post('/tenant-archives', { sizeBytes: file.size });
              const res = await fetch(up.uploadUrl, { method: 'PUT', headers: up.headers || {}, body: file });
              if (!res.ok) throw new Error(`the storage refused the upload (HTTP ${res.status})`);
              setSeen(false);
              setJobID((await api.post('/tenants/import', { fileId: up.fileId })).id);
            } finally {
              setBusy(false);
            }
          });
        }}
      >
        <input type="file" accept=".zip,application/zip" aria-label="Tenant archive" onChange={(e) => setFile(e.target.files[0] || null)} />{' '}
        <button type="submit" disabled={!file || busy || (job && LIVE.includes(job.status))}>
          Import
        </button>
      </form>
      <ErrorBox error={actError || error} />
      <JobStatus job={job} />
      {keys && !seen ? <Secret title={`API key of the imported tenant (${keys[0].name || 'admin'})`} value={keys.map((k) => k.key).join('\n')} onDone={() => setSeen(true)} /> : null}
      {job && job.status === 'succeeded' && job.result ? (
        <p>
          <button type="button" className="link" onClick={() => navigate('/tenants/' + enc(job.result.tenantId))}>
            Open the imported tenant
          </button>
        </p>
      ) : null}
    </details>
  );
}
