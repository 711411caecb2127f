-- dds.uuid_v7() (migration 00049) was an SQL function whose body has a
-- FROM: Postgres cannot inline it, and a non-inlined SQL function is
-- parsed and planned again by every statement that calls it. It is the
-- history table's default, so every update, delete and restore of an
-- entity with `history: true` paid that planning (a create computes the
-- same id inline: schema.UUIDv7SQL). In PL/pgSQL the one expression is
-- planned once per session and cached. Same ids as before: the
-- millisecond timestamp, then the fraction of the millisecond in the 12
-- bits after the version, from one clock_timestamp().

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION dds.uuid_v7() RETURNS uuid LANGUAGE plpgsql VOLATILE PARALLEL SAFE AS $$
DECLARE
    ms double precision := extract(epoch FROM clock_timestamp()) * 1000;
BEGIN
    RETURN encode(overlay(uuid_send(gen_random_uuid())
        PLACING substring(int8send(floor(ms)::bigint) FROM 3)
            || int2send((28672 + floor((ms - floor(ms)) * 4096))::int::smallint) -- 0x7000: version 7
        FROM 1 FOR 8), 'hex')::uuid;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION dds.uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT encode(overlay(uuid_send(gen_random_uuid())
        PLACING substring(int8send(floor(t.ms)::bigint) FROM 3)
            || int2send((28672 + floor((t.ms - floor(t.ms)) * 4096))::int::smallint) -- 0x7000: version 7
        FROM 1 FOR 8), 'hex')::uuid
    FROM (SELECT extract(epoch FROM clock_timestamp()) * 1000 AS ms) t
$$;
-- +goose StatementEnd
