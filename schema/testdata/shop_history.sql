-- ON
-- create the history table
CREATE TABLE IF NOT EXISTS "s_test"."_history" (
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
);
-- create the history trigger function
CREATE OR REPLACE FUNCTION "s_test"."dds_history_write"() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  n jsonb;
  o jsonb;
  op text;
  ch text[];
  actor jsonb := nullif(current_setting('dds.actor', true), '')::jsonb;
BEGIN
  IF TG_OP = 'DELETE' THEN
    n := to_jsonb(OLD) - '_search';
    op := 'delete';
    ch := '{}';
    PERFORM set_config('dds.history_own', '', true);
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
  INSERT INTO "s_test"."_history" ("entity", "record_id", "op", "key_id", "user_id", "changed", "record")
  VALUES (TG_TABLE_NAME, (n ->> 'id')::uuid, op, actor ->> 'keyId', actor ->> 'userId', ch, n);
  RETURN NULL;
END
$fn$;
-- turn history on for Category: record every write from now on (existing records get their first version at their next write)
CREATE TRIGGER "dds_history" AFTER UPDATE OR DELETE ON "s_test"."Category" FOR EACH ROW EXECUTE FUNCTION "s_test"."dds_history_write"();
-- record the creates of Category (but those whose statement wrote their version)
CREATE TRIGGER "dds_history_create" AFTER INSERT ON "s_test"."Category" FOR EACH ROW WHEN (NEW."id"::text IS DISTINCT FROM current_setting('dds.history_own', true)) EXECUTE FUNCTION "s_test"."dds_history_write"();
-- OFF
-- stop recording the history of Category
DROP TRIGGER "dds_history" ON "s_test"."Category";
-- stop recording the creates of Category
DROP TRIGGER IF EXISTS "dds_history_create" ON "s_test"."Category";
-- turn history off for Category: remove its recorded versions [DESTRUCTIVE]
DELETE FROM "s_test"."_history" WHERE "entity" = 'Category';
