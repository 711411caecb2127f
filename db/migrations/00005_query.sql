-- Vector search defaults for every new session of this database (issue 3):
-- HNSW scans continue until enough rows pass a filter (pgvector >= 0.8
-- iterative scans, relaxed order: DDS re-sorts by exact distance), and the
-- candidate list is 100 (recall@10 >= 0.95 on 100k x 128-dim embeddings,
-- see bench/rest). The query compiler still sets both with SET LOCAL for
-- the searches that need them, so a deployment whose role may not ALTER
-- DATABASE only loses the round trips this saves.

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('ALTER DATABASE %I SET hnsw.iterative_scan = relaxed_order', current_database());
    EXECUTE format('ALTER DATABASE %I SET hnsw.ef_search = 100', current_database());
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'DDS: cannot ALTER DATABASE %; vector searches set hnsw.* per transaction', current_database();
END $$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('ALTER DATABASE %I RESET hnsw.iterative_scan', current_database());
    EXECUTE format('ALTER DATABASE %I RESET hnsw.ef_search', current_database());
EXCEPTION WHEN insufficient_privilege THEN
    NULL;
END $$;
-- +goose StatementEnd
