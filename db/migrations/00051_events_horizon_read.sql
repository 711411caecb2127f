-- The live feed of GraphQL subscriptions (graphql/live) proved a safe
-- horizon of the outbox and read the events below it in three round trips
-- one after the other: the sequence's last value, then the writers in
-- flight (pg_locks, read after it: outbox/horizon.go), then the events.
-- On a loaded server each round trip waits for a core, and every frame
-- waited for all three after its write committed. This function takes the
-- same sample, in the same order, and then reads the events after a
-- position up to the sampled last value, in one round trip. The caller
-- (outbox.Horizon.AdvanceRead) keeps only the events at or below the
-- horizon the sample proves.
--
-- Why the events are read here and not in the calling statement: a
-- statement's snapshot is taken when it starts, before the sample; an
-- event whose writer committed between the two would be proven safe by
-- the sample yet invisible to the statement, and skipped. In a VOLATILE
-- function every statement takes a fresh snapshot (under READ COMMITTED,
-- which is how the feed calls it), so the read below sees every
-- transaction that had ended when the writers were read.
--
-- The events are read only up to what the sample itself proves when it
-- can (below the lowest floor of the writers in flight, migration 00050),
-- so a poll held back by a slow writer does not read the events behind it
-- again and again; h_bound says how far the read went. Every row carries
-- the sample (h_*); without events one row has NULL event columns. The advisory lock keys are those of
-- dds.next_event_seq() (migrations 00040 and 00050).

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION dds.events_horizon_read(tenants uuid[], after bigint, lim int, skip_types text[])
RETURNS TABLE (h_last bigint, h_holders text[], h_floor bigint, h_floorless int, h_bound bigint,
    e_id uuid, e_tenant_id uuid, e_schema_name text, e_type text, e_entity_name text, e_entity_id uuid,
    e_record jsonb, e_created_at timestamptz, e_seq bigint)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    q bigint;
    hs text[];
    fl bigint;
    nf int;
    b bigint;
BEGIN
    q := coalesce(pg_sequence_last_value('dds.events_seq_seq'), 0);
    -- After q, in its own statement (outbox/horizon.go: the proof needs
    -- the holders read after the last value).
    WITH l AS MATERIALIZED (
        SELECT virtualtransaction AS vx, classid, objid, objsubid FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())),
    w AS (SELECT DISTINCT vx FROM l WHERE classid = 1145324288 AND objid = 1 AND objsubid = 2),
    f AS (SELECT vx, min(((classid::bigint & 65535) << 32) | objid::bigint) AS floor FROM l
        WHERE objsubid = 1 AND classid::bigint >> 16 = 17491 GROUP BY vx)
    SELECT coalesce(array_agg(w.vx), '{}'), min(f.floor), (count(*) FILTER (WHERE f.vx IS NULL))::int
    INTO hs, fl, nf
    FROM w LEFT JOIN f USING (vx);
    b := CASE WHEN nf = 0 AND fl IS NOT NULL THEN least(q, fl - 1) ELSE q END;
    RETURN QUERY
    SELECT q, hs, fl, nf, b, e.id, e.tenant_id, e.schema_name, e.type, e.entity_name, e.entity_id, e.record, e.created_at, e.seq
    FROM (SELECT 1) one
    LEFT JOIN LATERAL (
        SELECT ev.id, ev.tenant_id, ev.schema_name, ev.type, ev.entity_name, ev.entity_id, ev.record, ev.created_at, ev.seq
        FROM dds.events ev
        WHERE ev.tenant_id = ANY(tenants) AND ev.seq > after AND ev.seq <= b AND ev.type <> ALL(skip_types)
        ORDER BY ev.seq LIMIT lim) e ON true
    ORDER BY e.seq; -- the caller relies on outbox order
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS dds.events_horizon_read(uuid[], bigint, int, text[]);
