-- The safe horizon of the outbox (outbox/horizon.go) waited for every
-- transaction holding the event writer lock when it was sampled to end,
-- also those that drew their seq after the events it was to release: under
-- a steady write load some writer is always in flight, so every event
-- waited for the slowest transaction running beside it (a frame of a
-- live subscription, 100 ms and more on a loaded machine). Now the first
-- seq a transaction draws is announced before it is drawn: the function
-- reads the sequence's last value L, takes a shared advisory lock keyed by
-- the bigint L + 1 (a floor of every seq the transaction will draw; tagged
-- in its top 16 bits, so seqs up to 2^48), and
-- only then calls nextval. A horizon sample then reads, for each writer in
-- flight, the lowest floor it holds, and every seq below the lowest floor
-- of all of them (and at most the sampled last value) is settled at once.
-- A writer seen without a floor lock falls back to the old proof. The
-- floor is taken once per transaction (a transaction-local setting
-- remembers it), so a statement writing many events holds one more lock,
-- not one per event. The sequence must not cache values per session
-- (it does not: CACHE 1), or a value below the last one could be drawn.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION dds.next_event_seq() RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    lo bigint;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1145324288, 1);
    IF coalesce(current_setting('dds.event_seq_floor', true), '') = '' THEN
        lo := coalesce(pg_sequence_last_value('dds.events_seq_seq'), 0) + 1;
        -- The key carries the tag 0x4453 ("DS") in its top 16 bits, apart
        -- from every other bigint advisory key of DDS (schema upgrades,
        -- the migrator), which a shared lock could otherwise wait for.
        PERFORM pg_advisory_xact_lock_shared(x'4453000000000000'::bigint | lo);
        PERFORM set_config('dds.event_seq_floor', lo::text, true);
    END IF;
    RETURN nextval('dds.events_seq_seq');
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION dds.next_event_seq() RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1145324288, 1);
    RETURN nextval('dds.events_seq_seq');
END
$$;
-- +goose StatementEnd
