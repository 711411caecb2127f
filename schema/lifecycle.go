package schema

import "fmt"

// Entity options of a record's lifecycle: soft delete and history.
//
// Soft delete is the system column deletedAt (null while a record is live)
// and a partial index on the deleted rows (finding and purging them); the
// query compiler hides deleted rows from every read.
//
// History is one table per Postgres schema, HistoryTable, shared by the
// schema's entities with History and filled by an AFTER ROW trigger on
// each of their tables, so every write path (single writes, batches, jobs,
// and any later one) records its versions in its own transaction without
// knowing about history. The trigger reads who wrote from the transaction
// setting HistoryActorSetting (JSON {"keyId", "userId"}), which the write
// statements of package records set; a write that does not set it is still
// recorded, with no actor. One table per schema rather than per entity:
// its name cannot collide with an entity or relationship (they cannot
// start with an underscore), a long entity name cannot overflow 63
// characters with a suffix, and turning history on is one trigger.

// HistoryActorSetting is the transaction-local setting the history
// trigger reads the writer from.
const HistoryActorSetting = "dds.actor"

// HistoryOwnSetting is the transaction-local setting by which a create
// that writes its own version (package records: the INSERT's statement
// inserts the version from its RETURNING, which costs far less than the
// trigger's plpgsql call) tells the create trigger to skip that one row.
// It holds the id of the record the statement inserts, set by the very
// expression that computes the id (so it is set before the row is
// inserted, when the trigger's WHEN clause is evaluated). Any other
// insert — another id, another session, raw SQL, a batch — does not match
// it and is recorded by the trigger; updates and deletes are never
// skipped. A hard delete clears it (the trigger function), so the only
// insert it could ever match, the same id inserted again after a delete in
// the same transaction, is recorded too.
const HistoryOwnSetting = "dds.history_own"

// UUIDv7SQL is the SQL of the UUIDv7 dds.uuid_v7() makes (db/migrations
// 00049: the ms timestamp, then the fraction of the millisecond in the 12
// bits after the version) from a column ms of clock_timestamp() in
// epoch milliseconds, which the caller selects once in a FROM item
// (UUIDv7ClockSQL). The same ids without the function call: a create with
// history computes its version's id in its own statement. (dds.uuid_v7()
// was an SQL function Postgres could not inline, planned anew by every
// statement calling it; migration 00053 made it PL/pgSQL, whose plan is
// cached per session, so the inline form is now one call cheaper, not a
// plan cheaper.)
func UUIDv7SQL(ms string) string {
	return fmt.Sprintf(`encode(overlay(uuid_send(gen_random_uuid()) PLACING substring(int8send(floor(%[1]s)::bigint) FROM 3) || int2send((28672 + floor((%[1]s - floor(%[1]s)) * 4096))::int::smallint) FROM 1 FOR 8), 'hex')::uuid`, ms)
}

// UUIDv7ClockSQL is the FROM item UUIDv7SQL reads its clock from, as
// alias: one clock_timestamp() for both parts of the id.
func UUIDv7ClockSQL(alias string) string {
	return "(SELECT extract(epoch FROM clock_timestamp()) * 1000 AS ms) " + alias
}

// HistoryChanged is the SQL of a version's changed fields, for a row of
// HistoryTable at alias x: those stored (updates, deletes, restores), or
// for a create the fields its record holds a value in.
func HistoryChanged(x string) string {
	return fmt.Sprintf(`coalesce(%[1]s."changed", ARRAY(SELECT f.k FROM jsonb_each(%[1]s."record") AS f(k, v) WHERE f.v <> 'null'::jsonb AND f.k NOT IN ('id', 'createdAt', 'updatedAt', 'deletedAt') ORDER BY f.k))`, x)
}

// lifecycleSteps are the steps of an entity's soft-delete and history
// options going from oe (nil: a new entity) to ne.
func lifecycleSteps(pg string, oe, ne *Entity) []Step {
	var steps []Step
	t := tableSQL(pg, ne.Name)
	wasSoft, wasHistory := oe != nil && oe.SoftDelete, oe != nil && oe.History
	ix := Ident(indexName(ne.Name, ColDeletedAt, "bt"))
	switch {
	case ne.SoftDelete && !wasSoft:
		if oe != nil {
			steps = append(steps, Step{
				SQL:         fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s timestamptz", t, Ident(ColDeletedAt)),
				Description: fmt.Sprintf("turn soft delete on for %s: add deletedAt (existing records stay live; deletes from now on only mark records)", ne.Name),
			})
		}
		steps = append(steps, Step{
			SQL:         fmt.Sprintf(`CREATE INDEX %s ON %s (%s) WHERE %s IS NOT NULL`, ix, t, Ident(ColDeletedAt), Ident(ColDeletedAt)),
			Description: "index the soft-deleted records of " + ne.Name,
		})
	case !ne.SoftDelete && wasSoft:
		steps = append(steps,
			Step{
				SQL:         fmt.Sprintf("DELETE FROM %s WHERE %s IS NOT NULL", t, Ident(ColDeletedAt)),
				Description: fmt.Sprintf("turn soft delete off for %s: remove its soft-deleted records for good (their edges go with them)", ne.Name),
				Destructive: true,
			},
			Step{SQL: fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", t, Ident(ColDeletedAt)), Description: "drop " + ne.Name + ".deletedAt"})
	}
	switch {
	case ne.History && !wasHistory:
		steps = append(steps, historyTable(pg)...)
		tr := historyTriggers(pg, ne.Name)
		tr[0].Description = fmt.Sprintf("turn history on for %s: record every write from now on (existing records get their first version at their next write)", ne.Name)
		steps = append(steps, tr...)
	case !ne.History && wasHistory:
		steps = append(steps,
			Step{SQL: fmt.Sprintf("DROP TRIGGER %s ON %s", Ident(historyTrigger), t), Description: "stop recording the history of " + ne.Name},
			// IF EXISTS: a table whose triggers predate the create trigger
			// and that `dds migrate` has not upgraded yet has only the first.
			Step{SQL: fmt.Sprintf("DROP TRIGGER IF EXISTS %s ON %s", Ident(historyCreateTrigger), t), Description: "stop recording the creates of " + ne.Name},
			dropHistory(pg, ne, "turn history off for "+ne.Name+": remove its recorded versions"))
	}
	return steps
}

const (
	historyTrigger       = "dds_history"        // updates and deletes
	historyCreateTrigger = "dds_history_create" // creates, but for those that wrote their own version
	historyFunc          = "dds_history_write"
)

// historyTriggers are the two triggers recording the versions of entity
// table name: one for updates and deletes, and one for creates whose WHEN
// clause skips the row whose create wrote its own version in its
// statement (HistoryOwnSetting). Two triggers because a WHEN clause that
// reads NEW cannot be on a trigger that also fires on DELETE. A WHEN
// clause is evaluated as the row is inserted and, when false, queues no
// trigger event at all.
func historyTriggers(pg, name string) []Step {
	t := tableSQL(pg, name)
	return []Step{
		{
			SQL: fmt.Sprintf(`CREATE TRIGGER %s AFTER UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION %s.%s()`,
				Ident(historyTrigger), t, Ident(pg), Ident(historyFunc)),
			Description: "record the updates and deletes of " + name,
		},
		{
			SQL: fmt.Sprintf(`CREATE TRIGGER %s AFTER INSERT ON %s FOR EACH ROW WHEN (NEW."id"::text IS DISTINCT FROM current_setting('%s', true)) EXECUTE FUNCTION %s.%s()`,
				Ident(historyCreateTrigger), t, HistoryOwnSetting, Ident(pg), Ident(historyFunc)),
			Description: "record the creates of " + name + " (but those whose statement wrote their version)",
		},
	}
}

// dropHistory removes the recorded versions of entity e.
func dropHistory(pg string, e *Entity, desc string) Step {
	return Step{
		SQL:         fmt.Sprintf("DELETE FROM %s WHERE \"entity\" = %s", QualifiedIdent(pg, HistoryTable), quote(e.Name)),
		Description: desc,
		Destructive: true,
	}
}

// historyTable creates the schema's history table, its index and the
// trigger function (each idempotent: several entities may turn history on
// in one plan, or after an earlier one did).
//
// The function stores the row as to_jsonb renders it (the generated
// full-text column left out) and, on an update, the names of the fields
// whose value differs (updatedAt left out). An update that changes nothing
// is not a version. A soft delete and a restore are updates of deletedAt,
// recorded as the operations delete and restore. A create stores no
// field names: they are the fields its record holds a value in, which the
// read derives (HistoryChanged), so the hot path of history, the create,
// writes one row and computes nothing. The one index is the primary key
// (record_id, id): a record's versions in order, which is the only read.
func historyTable(pg string) []Step {
	h := QualifiedIdent(pg, HistoryTable)
	return []Step{
		{SQL: fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
  "record_id" uuid NOT NULL,
  "id" uuid NOT NULL DEFAULT dds.uuid_v7(),
  "entity" text NOT NULL,
  "op" text NOT NULL,
  "at" timestamptz NOT NULL DEFAULT now(),
  "key_id" text,
  "user_id" text,
  "changed" text[],
  "record" jsonb NOT NULL,
  PRIMARY KEY ("record_id", "id")
)`, h), Description: "create the history table"},
		{SQL: fmt.Sprintf(`CREATE OR REPLACE FUNCTION %s.%s() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  n jsonb;
  o jsonb;
  op text;
  ch text[];
  actor jsonb := nullif(current_setting('%s', true), '')::jsonb;
BEGIN
  IF TG_OP = 'DELETE' THEN
    n := to_jsonb(OLD) - '_search';
    op := 'delete';
    ch := '{}';
    PERFORM set_config('%s', '', true);
  ELSIF TG_OP = 'INSERT' THEN
    n := to_jsonb(NEW) - '_search';
    op := 'create';
  ELSE
    n := to_jsonb(NEW) - '_search';
    o := to_jsonb(OLD) - '_search';
    ch := ARRAY(SELECT x.k FROM jsonb_each(n) AS x(k, v) WHERE x.v IS DISTINCT FROM o -> x.k AND x.k <> 'updatedAt' ORDER BY x.k);
    IF cardinality(ch) = 0 THEN
      RETURN NULL;
    END IF;
    op := CASE
      WHEN o ->> 'deletedAt' IS NULL AND n ->> 'deletedAt' IS NOT NULL THEN 'delete'
      WHEN o ->> 'deletedAt' IS NOT NULL AND n ->> 'deletedAt' IS NULL THEN 'restore'
      ELSE 'update' END;
  END IF;
  INSERT INTO %s ("entity", "record_id", "op", "key_id", "user_id", "changed", "record")
  VALUES (TG_TABLE_NAME, (n ->> 'id')::uuid, op, actor ->> 'keyId', actor ->> 'userId', ch, n);
  RETURN NULL;
END
$fn$`, Ident(pg), Ident(historyFunc), HistoryActorSetting, HistoryOwnSetting, h), Description: "create the history trigger function"},
	}
}
