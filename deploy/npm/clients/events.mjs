// Follows DDS's change feed with the eventsource package (the WHATWG
// EventSource a browser has, for Node) and prints one JSON line per event:
// {"id": <cursor>, "event": <the event>}, and {"open": true} when the stream
// is open. A browser cannot set headers on an EventSource; a Node client
// passes the credential through the fetch the package lets it supply, and
// so may resume with a Last-Event-ID of its own choosing (what the browser
// sends by itself when it reconnects). Usage:
//   node events.mjs <feed url> <bearer credential> [last event id]
import { EventSource } from 'eventsource';

const [url, token, lastEventId] = process.argv.slice(2);
const es = new EventSource(url, {
  fetch: (input, init) => fetch(input, {
    ...init,
    headers: {
      ...init.headers,
      Authorization: 'Bearer ' + token,
      ...(lastEventId && !init.headers['Last-Event-ID'] ? { 'Last-Event-ID': lastEventId } : {}),
    },
  }),
});
es.onopen = () => console.log(JSON.stringify({ open: true }));
es.onmessage = (m) => console.log(JSON.stringify({ id: m.lastEventId, event: JSON.parse(m.data) }));
es.onerror = (err) => console.log(JSON.stringify({ error: String(err?.message || err?.code || 'error'), code: err?.code }));
process.on('SIGTERM', () => { es.close(); process.exit(0); });
