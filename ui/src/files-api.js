// The presigned upload flow shared by the files screen and FILE fields:
// ask for an upload URL, PUT the bytes there with the headers it names,
// then confirm. Resolves to the confirmed file's metadata.
import { api, enc } from './api.js';

export async function uploadFile(file, target = {}) {
  const mimeType = file.type || 'application/octet-stream';
  const u = await api.post('/files/upload-url', { fileName: file.name, mimeType, sizeBytes: file.size, ...target });
  const res = await fetch(u.uploadUrl, { method: 'PUT', headers: { 'Content-Type': mimeType, ...(u.headers || {}) }, body: file });
  if (!res.ok) throw new Error(`the storage refused the upload (HTTP ${res.status})`);
  return api.post('/files/' + enc(u.fileId) + '/confirm');
}

export async function downloadFile(id) {
  const d = await api.get('/files/' + enc(id) + '/download-url');
  const a = document.createElement('a');
  a.href = d.url;
  a.download = d.fileName || '';
  a.rel = 'noopener';
  document.body.appendChild(a);
  a.click();
  a.remove();
}
