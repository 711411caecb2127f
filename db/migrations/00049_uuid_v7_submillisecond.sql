-- dds.uuid_v7() fills the 12 bits after the version nibble (rand_a) with
-- the fraction of the millisecond (RFC 9562, method 3), from
-- clock_timestamp()'s microseconds, instead of random bits. A record's
-- history versions are ordered by their ids (dds.uuid_v7() is the history
-- table's default): two writes of one record within the same millisecond,
-- an update then a delete in one transaction, were listed in a random
-- order. Ids now follow the order in which they were drawn whenever a
-- microsecond or more lies between them; ids drawn within the same
-- microsecond (rows of one statement) still order by their random tail.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION dds.uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT encode(overlay(uuid_send(gen_random_uuid())
        PLACING substring(int8send(floor(t.ms)::bigint) FROM 3)
            || int2send((28672 + floor((t.ms - floor(t.ms)) * 4096))::int::smallint) -- 0x7000: version 7
        FROM 1 FOR 8), 'hex')::uuid
    FROM (SELECT extract(epoch FROM clock_timestamp()) * 1000 AS ms) t
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION dds.uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
        PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
        52, 1), 53, 1), 'hex')::uuid
$$;
-- +goose StatementEnd
