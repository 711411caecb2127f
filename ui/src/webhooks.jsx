// Webhooks: create (the signing secret shown once), edit, toggle, delete,
// the delivery log with its attempts, response codes and manual retry, and
// a replay of the deliveries of a time window with its progress.
import { useEffect, useState } from 'react';
import { allows, api, ApiError, enc, errorAt } from './api.js';
import { ErrorBox, fmtTime, Link, ListTable, Row, Secret, useAction, useLoad } from './ui.jsx';

const EVENTS = [
  'entity.created',
  'entity.updated',
  'entity.deleted',
  'relationship.created',
  'relationship.updated',
  'relationship.deleted',
  'webhook.disabled',
  'delivery.exhausted',
];

export function Webhooks({ me, rest }) {
  if (rest) return <WebhookPage me={me} id={rest} />;
  return <WebhookList me={me} />;
}

function WebhookList({ me }) {
  const { data, error, reload } = useLoad((signal) => api.get('/webhooks', { signal }), []);
  const [created, setCreated] = useState(null);
  return (
    <section>
      <div className="toolbar">
        <h1>Webhooks</h1>
      </div>
      {created ? <Secret title="Webhook created: its signing secret" value={created.signingSecret} onDone={() => setCreated(null)} /> : null}
      {allows(me.scopes, 'webhook', '*', 'create') ? (
        <WebhookForm
          onSaved={(w) => {
            setCreated(w);
            reload();
          }}
        />
      ) : null}
      <ErrorBox error={error} />
      <ListTable label="Webhooks" items={data && data.webhooks} empty="No webhooks." head={["Target", "Events", "Entities", "Active", "Success rate", "Last triggered"]}>
        {(w) => (
              <tr key={w.id}>
                <td>
                  <Link to={'/webhooks/' + w.id}>{w.targetUrl}</Link>
                </td>
                <td>{w.eventTypes.join(', ')}</td>
                <td>{(w.entityNames || []).join(', ') || 'all'}</td>
                <td>{w.isActive ? <span className="badge ok">on</span> : <span className="badge">off</span>}</td>
                <td>{Math.round((w.successRate ?? 1) * 100)}%</td>
                <td>{fmtTime(w.lastTriggered)}</td>
              </tr>
        )}
      </ListTable>
    </section>
  );
}

function WebhookForm({ existing, onSaved, onCancel }) {
  const [targetUrl, setTargetUrl] = useState(existing?.targetUrl || '');
  const [eventTypes, setEventTypes] = useState(existing?.eventTypes || ['entity.created']);
  const [entityNames, setEntityNames] = useState((existing?.entityNames || []).join(', '));
  const [rateLimit, setRateLimit] = useState(existing?.rateLimit == null ? '' : String(existing.rateLimit));
  const [error, setError] = useState(null);
  const errs = error instanceof ApiError ? error.fieldErrors() : {};
  return (
    <form
      className="card"
      aria-label={existing ? 'Edit webhook' : 'New webhook'}
      onSubmit={async (e) => {
        e.preventDefault();
        setError(null);
        const body = {
          targetUrl,
          eventTypes,
          entityNames: entityNames
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
          // Empty: no limit. Anything else is sent as typed (a number when it
          // reads as one) so the API's message names what is wrong.
          rateLimit: rateLimit.trim() === '' ? null : Number.isNaN(Number(rateLimit)) ? rateLimit : Number(rateLimit),
        };
        try {
          const w = existing ? await api.patch('/webhooks/' + enc(existing.id), body) : await api.post('/webhooks', body);
          if (!existing) {
            setTargetUrl('');
            setEntityNames('');
            setRateLimit('');
          }
          onSaved(w);
        } catch (x) {
          setError(x);
        }
      }}
    >
      <h2>{existing ? 'Edit webhook' : 'New webhook'}</h2>
      <Row label="Target URL" error={errs.targetUrl}>
        <input type="url" name="targetUrl" value={targetUrl} onChange={(e) => setTargetUrl(e.target.value)} required placeholder="https://example.com/hooks/dds" />
      </Row>
      <fieldset className="checks">
        <legend>Events</legend>
        {EVENTS.map((ev) => (
          <label key={ev} className="check">
            <input type="checkbox" checked={eventTypes.includes(ev)} onChange={(e) => setEventTypes((s) => (e.target.checked ? [...s, ev] : s.filter((x) => x !== ev)))} /> {ev}
          </label>
        ))}
        {errs.eventTypes ? <span className="field-error">{errs.eventTypes}</span> : null}
      </fieldset>
      <Row label="Entities" error={errorAt(errs, 'entityNames')} hint="comma-separated; empty = every entity">
        <input name="entityNames" value={entityNames} onChange={(e) => setEntityNames(e.target.value)} />
      </Row>
      <Row label="Rate limit" error={errs.rateLimit} hint="deliveries per second, 1–1000; empty = unlimited">
        <input name="rateLimit" inputMode="numeric" value={rateLimit} onChange={(e) => setRateLimit(e.target.value)} />
      </Row>
      <ErrorBox error={error} hideFields />
      <div className="actions">
        <button type="submit">{existing ? 'Save' : 'Create webhook'}</button>
        {onCancel ? (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        ) : null}
      </div>
    </form>
  );
}

function WebhookPage({ me, id }) {
  const { data: w, error, reload } = useLoad((signal) => api.get('/webhooks/' + enc(id), { signal }), [id]);
  const [status, setStatus] = useState('');
  const { data: dl, error: dlError, reload: reloadDl, loading } = useLoad(
    (signal) => api.get(`/webhooks/${enc(id)}/deliveries?limit=50${status ? '&status=' + status : ''}`, { signal }),
    [id, status],
  );
  const [editing, setEditing] = useState(false);
  const [actError, act] = useAction();
  const [gone, setGone] = useState(false);
  const canUpdate = allows(me.scopes, 'webhook', '*', 'update');
  if (gone)
    return (
      <p>
        Deleted. <Link to="/webhooks">Back to webhooks</Link>
      </p>
    );
  if (error) return <ErrorBox error={error} />;
  if (!w) return <p>Loading…</p>;
  return (
    <section>
      <p>
        <Link to="/webhooks">← Webhooks</Link>
      </p>
      <div className="toolbar">
        <h1>{w.targetUrl}</h1>
        {canUpdate ? (
          <>
            <button type="button" onClick={() => act(async () => (await api.patch('/webhooks/' + enc(id), { isActive: !w.isActive }), reload()))}>
              {w.isActive ? 'Disable' : 'Enable'}
            </button>
            <button type="button" onClick={() => setEditing(true)}>
              Edit
            </button>
          </>
        ) : null}
        {allows(me.scopes, 'webhook', '*', 'delete') ? (
          <button
            type="button"
            className="danger"
            onClick={() => window.confirm('Delete this webhook and its delivery log?') && act(async () => (await api.del('/webhooks/' + enc(id)), setGone(true)))}
          >
            Delete
          </button>
        ) : null}
      </div>
      <p className="meta">
        {w.isActive ? 'active' : 'inactive'} · events {w.eventTypes.join(', ')} · entities {(w.entityNames || []).join(', ') || 'all'} · success rate{' '}
        {Math.round((w.successRate ?? 1) * 100)}% · last triggered {fmtTime(w.lastTriggered)} · rate limit{' '}
        {w.rateLimit == null ? 'none' : w.rateLimit + '/s'}
        {w.disabledReason ? ` · disabled (${w.disabledReason}) ${fmtTime(w.disabledAt)}` : ''}
      </p>
      {editing ? (
        <WebhookForm
          existing={w}
          onSaved={() => {
            setEditing(false);
            reload();
          }}
          onCancel={() => setEditing(false)}
        />
      ) : null}
      {canUpdate ? <Replay id={id} active={w.isActive} onDone={reloadDl} /> : null}
      <ErrorBox error={actError || dlError} />
      <div className="toolbar">
        <h2>Deliveries</h2>
        <select aria-label="Delivery status" value={status} onChange={(e) => setStatus(e.target.value)}>
          <option value="">all</option>
          {['queued', 'pending', 'retrying', 'succeeded', 'failed', 'cancelled'].map((s) => (
            <option key={s}>{s}</option>
          ))}
        </select>
        <button type="button" onClick={reloadDl} disabled={loading}>
          Refresh
        </button>
      </div>
      <ListTable label="Deliveries" items={dl && dl.deliveries} empty="No deliveries yet." head={["Event", "Entity", "Status", "Attempts", "Next attempt", "Created", ""]}>
        {(d) => (
              <tr key={d.id}>
                <td>{d.eventType}</td>
                <td>{d.entityName}</td>
                <td>
                  <span className={'badge ' + (d.status === 'succeeded' ? 'ok' : d.status === 'failed' ? 'bad' : '')}>{d.status}</span>
                </td>
                <td>
                  <ol className="attempts">
                    {(d.attemptLog || []).map((a) => (
                      <li key={a.attempt}>
                        #{a.attempt} {a.statusCode ? <code className={a.statusCode < 300 ? 'ok' : 'bad'}>HTTP {a.statusCode}</code> : <code className="bad">no response</code>} {a.latencyMs} ms{' '}
                        {a.error ? <span className="field-error">{a.error}</span> : null} <small>{fmtTime(a.attemptedAt)}</small>
                      </li>
                    ))}
                  </ol>
                </td>
                <td>{fmtTime(d.nextAttemptAt)}</td>
                <td>{fmtTime(d.createdAt)}</td>
                <td>
                  {canUpdate ? (
                    <button type="button" className="small" onClick={() => act(async () => (await api.post(`/webhooks/${enc(id)}/deliveries/${enc(d.id)}/retry`), reloadDl()))}>
                      Retry
                    </button>
                  ) : null}
                </td>
              </tr>
        )}
      </ListTable>
    </section>
  );
}

// localInput renders a Date for <input type="datetime-local"> (local time).
function localInput(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

// Replay re-sends the webhook's deliveries of a time window (POST
// .../replay, a durable job) and shows the job's progress, polled every
// second while it runs.
function Replay({ id, active, onDone }) {
  const [since, setSince] = useState(() => localInput(new Date(Date.now() - 3600e3)));
  const [until, setUntil] = useState('');
  const [onlyFailed, setOnlyFailed] = useState(true);
  const [error, setError] = useState(null);
  const [job, setJob] = useState(null);
  useEffect(() => {
    if (!job || job.status !== 'running') return undefined;
    const t = setTimeout(async () => {
      try {
        const j = await api.get(`/webhooks/${enc(id)}/replays/${enc(job.id)}`);
        setJob(j);
        if (j.status !== 'running') onDone();
      } catch (x) {
        setError(x);
      }
    }, 1000);
    return () => clearTimeout(t);
  }, [id, job, onDone]);
  const errs = error instanceof ApiError ? error.fieldErrors() : {};
  return (
    <form
      className="card"
      aria-label="Replay deliveries"
      onSubmit={async (e) => {
        e.preventDefault();
        setError(null);
        try {
          const body = { since: new Date(since).toISOString(), onlyFailed };
          if (until) body.until = new Date(until).toISOString();
          setJob(await api.post(`/webhooks/${enc(id)}/replay`, body));
        } catch (x) {
          setError(x);
        }
      }}
    >
      <h2>Replay</h2>
      <p className="meta">Re-send this webhook's deliveries created in a time window (same event ids, fresh signatures).</p>
      <Row label="Since" error={errs.since}>
        <input type="datetime-local" step="1" name="since" value={since} onChange={(e) => setSince(e.target.value)} required />
      </Row>
      <Row label="Until" error={errs.until} hint="empty = up to now">
        <input type="datetime-local" step="1" name="until" value={until} onChange={(e) => setUntil(e.target.value)} />
      </Row>
      <label className="check">
        <input type="checkbox" name="onlyFailed" checked={onlyFailed} onChange={(e) => setOnlyFailed(e.target.checked)} /> only failed deliveries
      </label>
      <ErrorBox error={error} hideFields />
      <div className="actions">
        <button type="submit" disabled={!active || (job && job.status === 'running')} title={active ? undefined : 'Enable the webhook to replay'}>
          Replay
        </button>
      </div>
      {job ? (
        <p role="status" aria-label="Replay progress">
          replay <code>{job.id}</code>: <span className={'badge ' + (job.status === 'completed' ? 'ok' : job.status === 'failed' ? 'bad' : '')}>{job.status}</span>{' '}
          <progress max={job.total || 1} value={job.total ? job.sent : job.status === 'completed' ? 1 : 0} /> {job.sent ?? 0} / {job.total ?? '…'} sent
        </p>
      ) : null}
    </form>
  );
}
