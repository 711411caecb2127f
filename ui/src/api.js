// The one HTTP client of the console: every call goes to the public API with
// the signed-in credential, and every failure becomes an ApiError carrying
// the API's code, message and per-field details.

const KEY = 'dds.credential';

export const credential = {
  get: () => sessionStorage.getItem(KEY) || '',
  set: (c) => sessionStorage.setItem(KEY, c),
  clear: () => sessionStorage.removeItem(KEY),
};

// The "view as user" token: kept in this module's memory only (never in
// storage), so a reload or sign-out ends the view. While set, every call
// goes with it instead of the signed-in credential.
let viewAsToken = '';
let viewAsEnded = () => {};
export const viewAsCredential = {
  get: () => viewAsToken,
  set: (t) => {
    viewAsToken = t;
  },
  clear: () => {
    viewAsToken = '';
  },
  // onEnded is told when the API refuses the view's token (401: it
  // expired, or its roles or minting key are gone): the view ends, rather
  // than the screen showing a 401.
  onEnded: (fn) => {
    viewAsEnded = fn;
  },
};

export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || 'HTTP_' + status;
    this.details = e.details || [];
    this.plan = e.plan;
    this.body = body;
  }
  // fieldErrors maps a field path to its message ({"price": "must be a number"}).
  fieldErrors() {
    const out = {};
    for (const d of this.details) if (d.field && !out[d.field]) out[d.field] = d.message;
    return out;
  }
}

export async function request(method, path, body, opts = {}) {
  const viewing = opts.credential === undefined && viewAsToken !== '' ? viewAsToken : '';
  const headers = { Authorization: 'Bearer ' + (opts.credential ?? (viewAsToken || credential.get())) };
  let payload;
  if (body !== undefined && body !== null) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const res = await fetch('/api/v1' + path, { method, headers, body: payload, signal: opts.signal });
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { error: { message: text } };
    }
  }
  if (res.status === 401 && viewing && viewing === viewAsToken) viewAsEnded(new ApiError(res.status, data));
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

export const api = {
  get: (p, o) => request('GET', p, undefined, o),
  post: (p, b, o) => request('POST', p, b ?? undefined, o),
  put: (p, b, o) => request('PUT', p, b, o),
  patch: (p, b, o) => request('PATCH', p, b, o),
  del: (p, o) => request('DELETE', p, undefined, o),
};

// allows reports whether scopes ("kind:name:op", * wildcards) grant op on kind/name.
export function allows(scopes, kind, name, op) {
  return (scopes || []).some((s) => {
    const [k, n, o] = s.split(':');
    return (k === '*' || k === kind) && (n === '*' || n === name) && (o === '*' || o === op);
  });
}

// anyOf reports whether scopes grant op on some name of kind (for menus).
export function anyOf(scopes, kind, op) {
  return (scopes || []).some((s) => {
    const [k, , o] = s.split(':');
    return (k === '*' || k === kind) && (o === '*' || o === op);
  });
}

export const enc = encodeURIComponent;

// errorAt is the first field error at path or inside it (path[i], path.x).
export function errorAt(errs, path) {
  if (errs[path]) return errs[path];
  const hit = Object.entries(errs).find(([k]) => k.startsWith(path + '[') || k.startsWith(path + '.'));
  return hit ? hit[1] : undefined;
}

// identify tells what a credential is: whoami for a tenant's key or token;
// the operator token, which belongs to no tenant, is known by the tenant
// API answering it ({operator: true}, no scopes: the tenants screen only).
export async function identify(cred) {
  try {
    return await request('GET', '/auth/whoami', undefined, { credential: cred });
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 401) throw err;
    try {
      await request('GET', '/tenants?limit=1', undefined, { credential: cred });
    } catch {
      throw err;
    }
    return { operator: true, scopes: [], tenantId: null };
  }
}
