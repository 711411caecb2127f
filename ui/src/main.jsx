// The DDS console: sign-in, then the screens the credential's scopes allow.
import { lazy, StrictMode, Suspense, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { anyOf, credential, identify, viewAsCredential } from './api.js';
import { ErrorBox, Link, navigate, usePath } from './ui.jsx';
import { Schemas } from './schemas.jsx';
import { Records } from './records.jsx';
import { Keys } from './keys.jsx';
import { Webhooks } from './webhooks.jsx';
import { Files } from './files.jsx';
import { Jobs } from './jobs.jsx';
import { Tenants } from './tenants.jsx';
import { Events } from './events.jsx';
import { Roles } from './roles.jsx';
import { ViewAsBanner, ViewEndedNotice } from './viewas.jsx';
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
  { path: '/roles', label: 'Roles', can: (s) => anyOf(s, 'role', 'read') },
  { path: '/keys', label: 'API keys', can: (s) => anyOf(s, 'apikey', 'read') },
  { path: '/events', label: 'Events', can: (s) => anyOf(s, 'entity', 'read') || anyOf(s, 'relationship', 'read') },
  { path: '/webhooks', label: 'Webhooks', can: (s) => anyOf(s, 'webhook', 'read') },
  { path: '/files', label: 'Files', can: (s) => anyOf(s, 'file', 'read') },
  { path: '/jobs', label: 'Jobs', can: (s) => anyOf(s, 'job', 'read') },
  { path: '/tenants', label: 'Tenants', can: (s, me) => !!me.operator },
];

// While viewing as a user only Records is offered: it is the screen whose
// every call goes with the user's token (GraphiQL keeps the console's own).
function Shell({ me: signedIn, onSignOut, viewAs, onViewAs, onLeaveViewAs, viewEnded, onDismissViewEnded }) {
  const path = usePath();
  const me = viewAs ? viewAs.me : signedIn;
  const allowed = screens.filter((s) => s.can(me.scopes, me) && (!viewAs || s.path === '/records'));
  useEffect(() => {
    if (path === '/' && allowed.length) navigate(allowed[0].path);
  }, [path, allowed]);
  const current = screens.find((s) => path === s.path || path.startsWith(s.path + '/'));
  let body;
  if (!current) body = allowed.length ? null : <p className="empty">This credential grants no screen of the console.</p>;
  else if (viewAs && current.path !== '/records') body = <ErrorBox error={{ message: `Viewing as a user shows Records only: leave the view to open ${current.label}.` }} />;
  else if (!current.can(me.scopes, me)) body = <ErrorBox error={{ message: `This credential's scopes do not allow ${current.label}.` }} />;
  else {
    const rest = path.slice(current.path.length).replace(/^\//, '');
    const props = { me, rest, entityNames: viewAs ? viewAs.entityNames : undefined };
    body = {
      '/schemas': <Schemas {...props} />,
      '/records': <Records {...props} />,
      '/graphql': (
        <Suspense fallback={<p>Loading GraphiQL…</p>}>
          <GraphQL {...props} />
        </Suspense>
      ),
      '/roles': <Roles {...props} onViewAs={onViewAs} />,
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
          tenant <code>{me.tenantId}</code> · {me.credential === 'userToken' ? <>user <code>{me.userId}</code></> : me.credential === 'accessToken' ? 'token' : 'key'} · {me.scopes.length} scope{me.scopes.length === 1 ? '' : 's'}
        </span>
        )}
        <button type="button" className="link" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      {viewAs ? <ViewAsBanner viewAs={viewAs} onLeave={onLeaveViewAs} /> : null}
      {viewEnded ? <ViewEndedNotice message={viewEnded} onDismiss={onDismissViewEnded} /> : null}
      <main className={current && current.path === '/graphql' ? 'full' : ''}>{body}</main>
    </div>
  );
}

function App() {
  const [me, setMe] = useState(null);
  const [viewAs, setViewAs] = useState(null);
  const [viewEnded, setViewEnded] = useState(null);
  // A view as user ends by itself when its token does: at expiresAt, or at
  // the first call the API refuses with 401 (its roles or minting key
  // gone, or a clock that disagrees); the console returns to its own view.
  useEffect(() => {
    if (!viewAs) return undefined;
    const end = (why) => {
      viewAsCredential.clear();
      setViewAs(null);
      setViewEnded(`The view as ${viewAs.userId} ended: ${why}. You are back in your own view.`);
      navigate('/roles');
    };
    viewAsCredential.onEnded(() => end('the API no longer accepts its token (expired, or its roles changed)'));
    const ms = new Date(viewAs.expiresAt).getTime() - Date.now();
    const timer = setTimeout(() => end('its token expired'), Math.max(0, Math.min(ms, 2 ** 31 - 1)));
    return () => {
      clearTimeout(timer);
      viewAsCredential.onEnded(() => {});
    };
  }, [viewAs]);
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
      viewAs={viewAs}
      viewEnded={viewEnded}
      onDismissViewEnded={() => setViewEnded(null)}
      onViewAs={(v) => {
        viewAsCredential.set(v.token);
        setViewEnded(null);
        setViewAs(v);
        navigate('/records');
      }}
      onLeaveViewAs={() => {
        viewAsCredential.clear();
        setViewAs(null);
        navigate('/roles');
      }}
      onSignOut={() => {
        viewAsCredential.clear();
        setViewAs(null);
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
