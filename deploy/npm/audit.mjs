// Runs graphql-http's auditServer against a DDS GraphQL endpoint and prints
// one JSON line per audit: {"name", "status", "reason"}. Usage:
//   node audit.mjs <url> <bearer credential>
import { auditServer } from 'graphql-http';

const [url, token] = process.argv.slice(2);
const fetchFn = (input, init = {}) => {
  const headers = new Headers(init.headers || {});
  headers.set('authorization', 'Bearer ' + token);
  return fetch(input, { ...init, headers });
};
const results = await auditServer({ url, fetchFn });
for (const r of results) {
  console.log(JSON.stringify({ name: r.name, status: r.status, reason: r.reason || '' }));
}
