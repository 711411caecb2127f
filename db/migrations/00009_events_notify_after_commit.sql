-- Committed events are announced on dds_events by the process that wrote
-- them, after commit and many per transaction (pgnotify.Publisher). A NOTIFY
-- inside the write took a database-wide lock at commit, held until the
-- commit record was flushed, so concurrent writes committed one by one.

-- +goose Up
DROP TRIGGER events_notify ON dds.events;
DROP FUNCTION dds.notify_event();

-- +goose Down
-- +goose StatementBegin
CREATE FUNCTION dds.notify_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('dds_events', NEW.tenant_id::text || ':' || NEW.id::text);
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER events_notify AFTER INSERT ON dds.events
    FOR EACH ROW EXECUTE FUNCTION dds.notify_event();
