-- Events are read as a stream only up to a proven safe horizon
-- (outbox/horizon.go). The proof needs to know which transactions may still
-- commit an event with a seq already drawn: every seq is now drawn by
-- dds.next_event_seq(), which first takes a shared transaction-level
-- advisory lock, so those transactions are exactly the lock's holders in
-- pg_locks. Transactions that write no event no longer hold the horizon.
-- The lock is only ever taken in shared mode: it never blocks a writer.
-- (1145324288, 1) is the key pair outbox.eventWriterLock* name.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION dds.next_event_seq() RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1145324288, 1);
    RETURN nextval('dds.events_seq_seq');
END
$$;
-- +goose StatementEnd
ALTER TABLE dds.events ALTER COLUMN seq SET DEFAULT dds.next_event_seq();

-- +goose Down
ALTER TABLE dds.events ALTER COLUMN seq SET DEFAULT nextval('dds.events_seq_seq');
DROP FUNCTION dds.next_event_seq();
