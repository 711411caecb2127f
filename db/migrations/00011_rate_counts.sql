-- Rate-limit counters shared by the server replicas: each replica adds
-- what it counted since its last sync (every DDS_RATE_SYNC_INTERVAL) to its
-- own row and reads the other replicas' rows back, so a limit holds across
-- replicas without a write per request. Rows of past windows are deleted
-- by the replicas as they sync.

-- +goose Up
CREATE UNLOGGED TABLE dds.rate_counts (
    limiter      text        NOT NULL, -- "ip", "auth", "tenant"
    key          text        NOT NULL, -- a client IP or a tenant id
    window_start timestamptz NOT NULL,
    replica      uuid        NOT NULL, -- the server process that counted
    count        integer     NOT NULL,
    seen_at      timestamptz NOT NULL DEFAULT now(), -- the replica's last sync of this row
    PRIMARY KEY (limiter, window_start, key, replica)
);

-- +goose Down
DROP TABLE dds.rate_counts;
