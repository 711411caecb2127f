// Small shared pieces: the client-side router, error display, form rows,
// the once-shown secret box, and a data hook.
import { useCallback, useEffect, useState, useSyncExternalStore } from 'react';
import { ApiError } from './api.js';

const BASE = '/console';

function subscribe(cb) {
  window.addEventListener('popstate', cb);
  return () => window.removeEventListener('popstate', cb);
}

// usePath returns the console-relative path ("/records/Product").
export function usePath() {
  const p = useSyncExternalStore(subscribe, () => window.location.pathname);
  return p.startsWith(BASE) ? p.slice(BASE.length) || '/' : '/';
}

export function navigate(to) {
  window.history.pushState(null, '', BASE + to);
  window.dispatchEvent(new PopStateEvent('popstate'));
}

export function Link({ to, children, ...rest }) {
  return (
    <a
      href={BASE + to}
      onClick={(e) => {
        if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate(to);
      }}
      {...rest}
    >
      {children}
    </a>
  );
}

// ErrorBox shows an API error: the message, the code, and (unless the form
// shows them beside its fields) the per-field details.
export function ErrorBox({ error, hideFields }) {
  if (!error) return null;
  const e = error instanceof ApiError ? error : null;
  return (
    <div className="error" role="alert">
      {e && e.status === 403 ? <strong>Not allowed: </strong> : null}
      {error.message}
      {e ? <span className="code"> ({e.code}{e.status ? ', HTTP ' + e.status : ''})</span> : null}
      {e && !hideFields && e.details.length > 0 ? (
        <ul>
          {e.details.map((d, i) => (
            <li key={i}>
              <code>{d.field}</code>: {d.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

// Row is a labelled form control with its field error under it.
export function Row({ label, error, children, hint }) {
  return (
    <label className={'row' + (error ? ' invalid' : '')}>
      <span className="label">{label}</span>
      {children}
      {hint ? <span className="hint">{hint}</span> : null}
      {error ? <span className="field-error" role="alert">{error}</span> : null}
    </label>
  );
}

// Secret shows a value the API returns once, with a copy button.
export function Secret({ title, value, onDone }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="secret" role="status">
      <strong>{title}</strong>
      <p>Copy it now: it is shown only once.</p>
      <code data-testid="secret">{value}</code>
      <div className="actions">
        <button
          type="button"
          onClick={async () => {
            try {
              await navigator.clipboard.writeText(value);
              setCopied(true);
            } catch {
              setCopied(false);
            }
          }}
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
        {onDone ? (
          <button type="button" onClick={onDone}>
            Done
          </button>
        ) : null}
      </div>
    </div>
  );
}

// useLoad runs load() when deps change; reload() runs it again.
export function useLoad(load, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ctl = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    load(ctl.signal).then(
      (data) => !ctl.signal.aborted && setState({ data, error: null, loading: false }),
      (error) => !ctl.signal.aborted && error.name !== 'AbortError' && setState({ data: null, error, loading: false }),
    );
    return () => ctl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

// useAction runs one user action at a time and keeps its failure for display.
export function useAction() {
  const [error, setError] = useState(null);
  const run = useCallback(async (fn) => {
    setError(null);
    try {
      await fn();
    } catch (e) {
      setError(e);
    }
  }, []);
  return [error, run];
}

export function fmtTime(t) {
  if (!t) return '—';
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toLocaleString();
}

export function Empty({ children }) {
  return <p className="empty">{children}</p>;
}

// ListTable is a list screen's table: the empty message when there is
// nothing, else one row per item (children renders a <tr>). Nothing while loading.
export function ListTable({ label, items, empty, head, children }) {
  if (!items) return null;
  if (items.length === 0) return <Empty>{empty}</Empty>;
  return (
    <table className="grid" aria-label={label}>
      <thead>
        <tr>
          {head.map((h, i) => (
            <th key={i}>{h}</th>
          ))}
        </tr>
      </thead>
      <tbody>{items.map(children)}</tbody>
    </table>
  );
}
