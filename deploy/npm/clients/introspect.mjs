// Introspects a DDS GraphQL endpoint as GraphiQL and graphql-codegen do
// (graphql-js getIntrospectionQuery + buildClientSchema + a full schema
// validation) and prints one JSON object: the raw type names the server
// listed and the SDL graphql-js prints from them. Usage:
//   node introspect.mjs <url> <bearer credential>
import { getIntrospectionQuery, buildClientSchema, assertValidSchema, printSchema } from 'graphql';

const [url, token] = process.argv.slice(2);
const res = await fetch(url, {
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', authorization: 'Bearer ' + token },
  body: JSON.stringify({ query: getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, inputValueDeprecation: true }) }),
});
const body = await res.json();
if (res.status !== 200 || body.errors) {
  console.error(res.status, JSON.stringify(body.errors));
  process.exit(1);
}
const schema = buildClientSchema(body.data);
assertValidSchema(schema);
console.log(JSON.stringify({ types: body.data.__schema.types.map((t) => t.name), sdl: printSchema(schema) }));
