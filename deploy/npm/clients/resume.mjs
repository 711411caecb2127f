// Runs N graphql-ws clients (the graphql-transport-ws protocol, as browsers
// and Apollo/urql clients use it), each on its own socket, each following
// one subscription that takes `after: String` and selects `cursor`. When a
// client's socket ends (its server died, the balancer closed it), the client
// connects again and resubscribes with the last cursor it received, as the
// docs tell clients to do. Prints one JSON line per happening:
//   {"client": i, "connected": n}        socket n of client i acknowledged
//   {"client": i, "cursor": c, "type": t} an event (the subscription's field)
//   {"client": i, "closed": reason}      the socket ended; it reconnects
//   {"client": i, "error": message}      the server refused the subscription
// Usage:
//   node resume.mjs <ws url> <bearer credential> <clients> <field> <subscription document> [first cursor]
// The document declares `$after: String` and passes it to <field>.
import { createClient } from 'graphql-ws';

const [url, token, count, field, query, first] = process.argv.slice(2);
const out = (o) => console.log(JSON.stringify(o));
const clients = [];

function follow(i, after, attempt) {
  const client = createClient({
    url,
    webSocketImpl: WebSocket, // Node 22's global WebSocket
    connectionParams: { authorization: 'Bearer ' + token },
    retryAttempts: 0, // reconnecting is this client's job: it must resubscribe with its cursor
    on: { connected: () => out({ client: i, connected: attempt }) },
  });
  clients[i] = client;
  let last = after;
  let ended = false;
  const again = (reason) => {
    if (ended) return;
    ended = true;
    out({ client: i, closed: reason });
    client.dispose();
    setTimeout(() => follow(i, last, attempt + 1), 100); // back off a little, then resume
  };
  client.subscribe({ query, variables: last ? { after: last } : {} }, {
    next: (payload) => {
      if (payload.errors) {
        out({ client: i, error: JSON.stringify(payload.errors) });
        return;
      }
      const ev = payload.data?.[field];
      if (ev) {
        last = ev.cursor;
        out({ client: i, cursor: ev.cursor, type: ev.type });
      }
    },
    // A socket that ends fails the subscription with its close event;
    // a GraphQL error list is the server refusing it.
    error: (err) => {
      if (Array.isArray(err)) {
        out({ client: i, error: JSON.stringify(err) });
        return;
      }
      again(String(err?.code ?? '') + ' ' + String(err?.reason || err?.message || 'closed'));
    },
    complete: () => again('complete'),
  });
}

for (let i = 0; i < Number(count); i++) follow(i, first, 1);
process.on('SIGTERM', async () => {
  await Promise.all(clients.map((c) => c.dispose()));
  process.exit(0);
});
