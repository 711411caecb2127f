// PostGraphile 5 as `make bench` runs it (bench/cmd/ddsbench): the amber
// preset plus the connection-filter plugin, so the peer can answer the
// list section's range filter (price ≥ N) like DDS's `where`. PostGraphile
// offers filters and orders only on indexed columns unless
// PgIndexBehaviorsPlugin is off; price has no index (nor does it in DDS,
// whose list walks the createdAt index and filters), so it is off here.
// The aggregate sections use @graphile/pg-aggregates (its v5 line), which
// adds aggregates and groupedAggregates to every connection.
// The connection, schema and port come from the command line.
import { PostGraphileAmberPreset } from "postgraphile/presets/amber";
import { PostGraphileConnectionFilterPreset } from "postgraphile-plugin-connection-filter";
import { PgAggregatesPreset } from "@graphile/pg-aggregates";

export default {
  extends: [PostGraphileAmberPreset, PostGraphileConnectionFilterPreset, PgAggregatesPreset],
  disablePlugins: ["PgIndexBehaviorsPlugin"],
};
