// Files: list (server-paged), upload through the presigned flow, download, delete.
import { useState } from 'react';
import { allows, api, enc } from './api.js';
import { downloadFile, uploadFile } from './files-api.js';
import { ErrorBox, fmtTime, ListTable, useAction, useLoad } from './ui.jsx';

const PAGE = 50;

export function Files({ me }) {
  const [offset, setOffset] = useState(0);
  const [status, setStatus] = useState('');
  const { data, error, reload } = useLoad((signal) => api.get(`/files?limit=${PAGE}&offset=${offset}${status ? '&status=' + status : ''}`, { signal }), [offset, status]);
  const [actError, act] = useAction();
  const [busy, setBusy] = useState(false);
  return (
    <section>
      <div className="toolbar">
        <h1>Files</h1>
        <select aria-label="Status" value={status} onChange={(e) => (setStatus(e.target.value), setOffset(0))}>
          <option value="">confirmed</option>
          <option value="pending">pending</option>
          <option value="expired">expired</option>
          <option value="all">all</option>
        </select>
        {allows(me.scopes, 'file', '*', 'create') ? (
          <label className="button">
            {busy ? 'Uploading…' : 'Upload file'}
            <input
              type="file"
              className="visually-hidden"
              aria-label="Upload file"
              disabled={busy}
              onChange={(e) => {
                const f = e.target.files[0];
                e.target.value = '';
                if (!f) return;
                setBusy(true);
                act(async () => {
                  await uploadFile(f);
                  reload();
                }).finally(() => setBusy(false));
              }}
            />
          </label>
        ) : null}
      </div>
      <ErrorBox error={error || actError} />
      <ListTable label="Files" items={data && data.files} empty="No files." head={["Name", "Type", "Size", "Status", "Attached to", "Created", ""]}>
        {(f) => (
              <tr key={f.id}>
                <td>{f.fileName}</td>
                <td>{f.mimeType}</td>
                <td>{size(f.sizeBytes)}</td>
                <td>{f.status}</td>
                <td>{f.entityName ? `${f.entityName}.${f.fieldName || ''}` : '—'}</td>
                <td>{fmtTime(f.createdAt)}</td>
                <td className="actions">
                  {f.status === 'confirmed' ? (
                    <button type="button" className="small" aria-label={`Download ${f.fileName}`} onClick={() => act(() => downloadFile(f.id))}>
                      Download
                    </button>
                  ) : null}
                  {allows(me.scopes, 'file', '*', 'delete') ? (
                    <button
                      type="button"
                      className="small danger"
                      aria-label={`Delete ${f.fileName}`}
                      onClick={() =>
                        window.confirm(`Delete ${f.fileName}?`) &&
                        act(async () => {
                          await api.del('/files/' + enc(f.id));
                          reload();
                        })
                      }
                    >
                      Delete
                    </button>
                  ) : null}
                </td>
              </tr>
        )}
      </ListTable>
      {data ? (
        <div className="pager">
          <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
            ← Previous
          </button>
          <span>{data.total ? `${offset + 1}–${Math.min(offset + PAGE, data.total)} of ${data.total}` : ''}</span>
          <button type="button" disabled={offset + PAGE >= data.total} onClick={() => setOffset(offset + PAGE)}>
            Next →
          </button>
        </div>
      ) : null}
    </section>
  );
}

function size(n) {
  if (n == null) return '—';
  if (n < 1024) return n + ' B';
  if (n < 1 << 20) return (n / 1024).toFixed(1) + ' KB';
  return (n / (1 << 20)).toFixed(1) + ' MB';
}
