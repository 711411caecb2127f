// PostGraphile 5 as `make bench` runs it (bench/cmd/ddsbench): the amber
// preset plus the connection-filter plugin, so the peer can answer the
// list section's range filter (price ≥ N) like DDS's `where`. PostGraphile
// offers filters and orders only on indexed columns unless
// PgIndexBehaviorsPlugin is off; price has no index (nor does it in DDS,
// whose list walks the createdAt index and filters), so it is off here.
// The aggregate sections use @graphile/pg-aggregates (its v5 line), which
// adds aggregates and groupedAggregates to every connection.
// The connection and schema come from the environment (ddsbench sets
// DDSBENCH_PEER_CONNECTION and DDSBENCH_PEER_SCHEMA), the port from the
// command line. The pool keeps its idle connections: pg's pool closes them
// after 10 s by default, so every contender of PostGraphile reconnected,
// and the closed connections' Postgres processes exited during whichever
// contender ran about 10 s later, often a DDS one, whose Postgres CPU
// then included their exit (0.2–0.4 s in a 2 s run; bench/README.md).
// The CLI's --connection would build its own pool without these settings.
import { PostGraphileAmberPreset } from "postgraphile/presets/amber";
import { PostGraphileConnectionFilterPreset } from "postgraphile-plugin-connection-filter";
import { PgAggregatesPreset } from "@graphile/pg-aggregates";
import { makePgService } from "postgraphile/adaptors/pg";

const connectionString = process.env.DDSBENCH_PEER_CONNECTION;
const schema = process.env.DDSBENCH_PEER_SCHEMA;
if (!connectionString || !schema) {
  throw new Error("DDSBENCH_PEER_CONNECTION and DDSBENCH_PEER_SCHEMA must be set");
}

export default {
  extends: [PostGraphileAmberPreset, PostGraphileConnectionFilterPreset, PgAggregatesPreset],
  disablePlugins: ["PgIndexBehaviorsPlugin"],
  pgServices: [makePgService({ connectionString, schemas: [schema], poolConfig: { idleTimeoutMillis: 0 } })],
};
