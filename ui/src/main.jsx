// The DDS console: sign-in, then the screens the credential's scopes allow.
import { lazy, StrictMode, Suspense, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { anyOf, credential, identify } from './api.js';
import { ErrorBox, Link, navigate, usePath } from './ui.jsx';
import { Schemas } from './schemas.jsx';
import { Records } from './records.jsx';
import { Keys } from './keys.jsx';
import { Webhooks } from './webhooks.jsx';
import { Files } from './files.jsx';
import { Jobs } from './jobs.jsx';
import { Tenants } from './tenants.jsx';
import { Events } from './events.jsx';
import './style.css';

// GraphiQL is most of the bundle: loaded only when its screen opens.
const GraphQL = lazy(() => import('./graphql.jsx'));

function Login({ onSignedIn, error: initial }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState(initial);
  const [busy, setBusy] = useState(false);
  async function submit(e) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const me = await identify(value.trim());
      credential.set(value.trim());
      onSignedIn(me);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }
  return (
    <main className="login">
      <form onSubmit={submit}>
        <h1>DDS console</h1>
        <p>Sign in with an API key (<code>dds_live_…</code>), an access token, or the operator token (the tenants screen). It is kept in this tab only.</p>
        <label className="row">
          <span className="label">API key, access token or operator token</span>
          <input name="credential" type="password" autoFocus autoComplete="off" value={value} onChange={(e) => setValue(e.target.value)} required />
        </label>
        <ErrorBox error={error} />
        <button type="submit" disabled={busy || !value.trim()}>
          Sign in
        </button>
      </form>
    </main>
  );
}

const screens = [
  { path: '/schemas', label: 'Schemas', can: (s) => anyOf(s, 'schema', 'read') },
  { path: '/records', label: 'Records', can: (s) => anyOf(s, 'entity', 'read') },
  { path: '/graphql', label: 'GraphQL', can: (s) => anyOf(s, 'entity', 'read') },
  { path: '/keys', label: 'API keys', can: (s) => anyOf(s, 'apikey', 'read') },
  { path: '/events', label: 'Events', can: (s) => anyOf(s, 'entity', 'read') || anyOf(s, 'relationship', 'read') },
  { path: '/webhooks', label: 'Webhooks', can: (s) => anyOf(s, 'webhook', 'read') },
  { path: '/files', label: 'Files', can: (s) => anyOf(s, 'file', 'read') },
  { path: '/jobs', label: 'Jobs', can: (s) => anyOf(s, 'job', 'read') },
  { path: '/tenants', label: 'Tenants', can: (s, me) => !!me.operator },
];

function Shell({ me, onSignOut }) {
  const path = usePath();
  const allowed = screens.filter((s) => s.can(me.scopes, me));
  useEffect(() => {
    if (path === '/' && allowed.length) navigate(allowed[0].path);
  }, [path, allowed]);
  const current = screens.find((s) => path === s.path || path.startsWith(s.path + '/'));
  let body;
  if (!current) body = allowed.length ? null : <p className="empty">This credential grants no screen of the console.</p>;
  else if (!current.can(me.scopes, me)) body = <ErrorBox error={{ message: `This credential's scopes do not allow ${current.label}.` }} />;
  else {
    const rest = path.slice(current.path.length).replace(/^\//, '');
    const props = { me, rest };
    body = {
      '/schemas': <Schemas {...props} />,
      '/records': <Records {...props} />,
      '/graphql': (
        <Suspense fallback={<p>Loading GraphiQL…</p>}>
          <GraphQL {...props} />
        </Suspense>
      ),
      '/keys': <Keys {...props} />,
      '/events': <Events {...props} />,
      '/webhooks': <Webhooks {...props} />,
      '/files': <Files {...props} />,
      '/jobs': <Jobs {...props} />,
      '/tenants': <Tenants {...props} />,
    }[current.path];
  }
  return (
    <div className="shell">
      <header>
        <span className="brand">DDS</span>
        <nav aria-label="Screens">
          {allowed.map((s) => (
            <Link key={s.path} to={s.path} aria-current={current === s ? 'page' : undefined}>
              {s.label}
            </Link>
          ))}
        </nav>
        {me.operator ? (
          <span className="who">operator</span>
        ) : (
        <span className="who" title={me.scopes.join('\n')}>
          tenant <code>{me.tenantId}</code> · {me.credential === 'accessToken' ? 'token' : 'key'} · {me.scopes.length} scope{me.scopes.length === 1 ? '' : 's'}
        </span>
        )}
        <button type="button" className="link" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <main className={current && current.path === '/graphql' ? 'full' : ''}>{body}</main>
    </div>
  );
}

function App() {
  const [me, setMe] = useState(null);
  const [state, setState] = useState(credential.get() ? 'checking' : 'out');
  const [error, setError] = useState(null);
  useEffect(() => {
    if (state !== 'checking') return;
    identify(credential.get()).then(
      (m) => {
        setMe(m);
        setState('in');
      },
      (err) => {
        credential.clear();
        setError(err);
        setState('out');
      },
    );
  }, [state]);
  if (state === 'checking') return <p className="empty">Checking the credential…</p>;
  if (state === 'out' || !me)
    return (
      <Login
        error={error}
        onSignedIn={(m) => {
          setMe(m);
          setState('in');
        }}
      />
    );
  return (
    <Shell
      me={me}
      onSignOut={() => {
        credential.clear();
        setMe(null);
        setError(null);
        setState('out');
        navigate('/');
      }}
    />
  );
}

createRoot(document.getElementById('root')).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
