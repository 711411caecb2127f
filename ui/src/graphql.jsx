// GraphiQL for the tenant's active schema, with the signed-in credential
// injected (never shown in or persisted by the headers editor), subscriptions
// over graphql-ws, and the explorer plugin. Loaded on demand.
import { useMemo } from 'react';
import { GraphiQL } from 'graphiql';
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { explorerPlugin } from '@graphiql/plugin-explorer';
import { createClient } from 'graphql-ws';
import { credential } from './api.js';
import 'graphiql/style.css';
import '@graphiql/plugin-explorer/style.css';

const explorer = explorerPlugin();

export default function GraphQL({ me }) {
  const fetcher = useMemo(() => {
    const secret = credential.get();
    const ws = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/api/v1/dynamic-gql/ws';
    return createGraphiQLFetcher({
      url: '/api/v1/dynamic-gql/' + encodeURIComponent(me.tenantId),
      headers: { Authorization: 'Bearer ' + secret },
      wsClient: createClient({ url: ws, connectionParams: { authorization: 'Bearer ' + secret }, lazy: true }),
    });
  }, [me.tenantId]);
  return (
    <div className="graphiql-host">
      <GraphiQL fetcher={fetcher} plugins={[explorer]} shouldPersistHeaders={false} isHeadersEditorEnabled={false} defaultEditorToolsVisibility={false} />
    </div>
  );
}
