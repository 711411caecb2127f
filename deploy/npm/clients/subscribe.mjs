// Subscribes with the graphql-ws client (the graphql-transport-ws protocol,
// as browsers and Apollo/urql clients use it) and prints one JSON line per
// event: {"sub": <index>, "payload": <execution result>}. Usage:
//   node subscribe.mjs <ws url> <bearer credential> <subscription document>...
import { createClient } from 'graphql-ws';

const [url, token, ...documents] = process.argv.slice(2);
const client = createClient({
  url,
  webSocketImpl: WebSocket, // Node 22's global WebSocket
  connectionParams: { authorization: 'Bearer ' + token },
  retryAttempts: 0,
  on: { connected: () => console.log(JSON.stringify({ connected: true })) },
});
const fail = (err) => {
  console.log(JSON.stringify({ error: String(err?.message || err?.reason || JSON.stringify(err)) }));
  process.exit(1);
};
documents.forEach((query, sub) => {
  client.subscribe({ query }, {
    next: (payload) => console.log(JSON.stringify({ sub, payload })),
    error: fail,
    complete: () => {},
  });
});
process.on('SIGTERM', async () => { await client.dispose(); process.exit(0); });
