// Typed inputs for record fields and relationship properties: each field
// type gets its control (ENUM select, TIMESTAMP picker, list editor, FILE
// upload, VECTOR/JSON as JSON) and parses its text back to the API's value.
import { useState } from 'react';
import { uploadFile, downloadFile } from './files-api.js';

// toText renders a stored value in the field's control.
export function toText(f, v) {
  if (v === null || v === undefined) return '';
  if (f.list) {
    if (['STRING', 'TEXT', 'ENUM', 'DATE', 'TIMESTAMP', 'INTEGER', 'NUMBER', 'BOOLEAN'].includes(f.type)) return v.map((x) => (f.type === 'TIMESTAMP' ? x : String(x))).join('\n');
    return JSON.stringify(v);
  }
  switch (f.type) {
    case 'JSON':
    case 'VECTOR':
      return JSON.stringify(v);
    case 'TIMESTAMP':
      return toLocalInput(v);
    case 'BOOLEAN':
      return v ? 'true' : 'false';
    default:
      return String(v);
  }
}

function toLocalInput(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return String(iso);
  const pad = (n, w = 2) => String(n).padStart(w, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function scalar(type, s) {
  switch (type) {
    case 'INTEGER':
    case 'NUMBER': {
      const n = Number(s);
      return s.trim() === '' || isNaN(n) ? s : n; // the API names a bad number
    }
    case 'BOOLEAN':
      return s === 'true' ? true : s === 'false' ? false : s;
    case 'TIMESTAMP': {
      const d = new Date(s);
      return isNaN(d) ? s : d.toISOString();
    }
    default:
      return s;
  }
}

// fromText parses a control's text to the value sent; '' is null.
export function fromText(f, s) {
  if (s === '' || s === undefined) return null;
  if (f.type === 'JSON' || f.type === 'VECTOR') {
    try {
      return JSON.parse(s);
    } catch {
      return s; // sent as a string: the API answers which field is wrong
    }
  }
  if (f.list)
    return s
      .split('\n')
      .map((x) => x.trim())
      .filter((x) => x !== '')
      .map((x) => scalar(f.type, x));
  return scalar(f.type, s);
}

export function FieldInput({ f, value, onChange, id, entity }) {
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState(null);
  const common = { id, name: f.name, value, onChange: (e) => onChange(e.target.value), 'aria-label': f.name };
  if (f.list) return <textarea {...common} rows={3} placeholder="one value per line" />;
  switch (f.type) {
    case 'TEXT':
      return <textarea {...common} rows={3} />;
    case 'INTEGER':
      return <input {...common} type="number" step="1" />;
    case 'NUMBER':
      return <input {...common} type="number" step="any" />;
    case 'BOOLEAN':
      return (
        <select {...common}>
          <option value="">—</option>
          <option value="true">true</option>
          <option value="false">false</option>
        </select>
      );
    case 'TIMESTAMP':
      return <input {...common} type="datetime-local" step="1" />;
    case 'DATE':
      return <input {...common} type="date" />;
    case 'ENUM':
      return (
        <select {...common}>
          <option value="">—</option>
          {(f.values || []).map((v) => (
            <option key={v}>{v}</option>
          ))}
        </select>
      );
    case 'JSON':
      return <textarea {...common} rows={3} className="mono" placeholder='{"key": "value"}' />;
    case 'VECTOR':
      return <textarea {...common} rows={2} className="mono" placeholder={`[${Array(Math.min(f.vectorDimensions || 3, 3)).fill('0.1').join(', ')}${(f.vectorDimensions || 3) > 3 ? ', …' : ''}]  (${f.vectorDimensions} numbers)`} />;
    case 'FILE':
      return (
        <div className="file-input">
          <input {...common} className="mono" placeholder="file id" />
          <input
            type="file"
            aria-label={`Upload ${f.name}`}
            disabled={busy}
            onChange={async (e) => {
              const file = e.target.files[0];
              if (!file) return;
              setBusy(true);
              setErr(null);
              try {
                const meta = await uploadFile(file, { entityName: entity, fieldName: f.name });
                onChange(meta.id);
              } catch (x) {
                setErr(x.message);
              } finally {
                setBusy(false);
              }
            }}
          />
          {value ? (
            <button type="button" className="small" onClick={() => downloadFile(value).catch((x) => setErr(x.message))}>
              Download
            </button>
          ) : null}
          {busy ? <span>Uploading…</span> : null}
          {err ? <span className="field-error">{err}</span> : null}
        </div>
      );
    default:
      return <input {...common} type="text" maxLength={f.maxLength || undefined} />;
  }
}

// fieldHint describes a field's type for its label.
export function fieldHint(f) {
  return `${f.type}${f.list ? '[]' : ''}${f.type === 'VECTOR' ? `(${f.vectorDimensions})` : ''}${f.required ? ', required' : ''}`;
}
