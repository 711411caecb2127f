-- create the data schema
CREATE SCHEMA IF NOT EXISTS "s_test";
-- create entity Product
CREATE TABLE "s_test"."Product" (
  "id" uuid PRIMARY KEY,
  "createdAt" timestamptz NOT NULL DEFAULT now(),
  "updatedAt" timestamptz NOT NULL DEFAULT now(),
  "name" text NOT NULL,
  "price" double precision,
  "stock" bigint DEFAULT 0,
  "active" boolean,
  "tags" text[],
  "releasedAt" timestamptz,
  "attributes" jsonb,
  "status" text,
  "manual" uuid,
  "embedding" vector(384),
  "_search" tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, coalesce("name", ''))) STORED
);
-- index Product.createdAt
CREATE INDEX "ix_bt_5543ca33a0c597c4" ON "s_test"."Product" ("createdAt", "id");
-- gin index on Product.tags
CREATE INDEX "ix_gin_b804bb7a3135d217" ON "s_test"."Product" USING gin ("tags");
-- bt index on Product.manual
CREATE INDEX "ix_bt_c48dc3984bff812d" ON "s_test"."Product" ("manual");
-- hnsw index on Product.embedding
CREATE INDEX "ix_hnsw_d2a74a8313f3796b" ON "s_test"."Product" USING hnsw ("embedding" vector_cosine_ops);
-- full-text index on Product
CREATE INDEX "ix_gin_b3fdbc6d3a36bae6" ON "s_test"."Product" USING gin ("_search");
-- create entity Category
CREATE TABLE "s_test"."Category" (
  "id" uuid PRIMARY KEY,
  "createdAt" timestamptz NOT NULL DEFAULT now(),
  "updatedAt" timestamptz NOT NULL DEFAULT now(),
  "name" text
);
-- index Category.createdAt
CREATE INDEX "ix_bt_2002af61782feedb" ON "s_test"."Category" ("createdAt", "id");
-- uq index on Category.name
CREATE UNIQUE INDEX "ix_uq_5fedfe2215fa2d74" ON "s_test"."Category" ("name");
-- create relationship IN_CATEGORY
CREATE TABLE "s_test"."IN_CATEGORY" (
  "id" uuid PRIMARY KEY,
  "source_id" uuid NOT NULL REFERENCES "s_test"."Product" ("id") ON DELETE CASCADE,
  "target_id" uuid NOT NULL REFERENCES "s_test"."Category" ("id") ON DELETE CASCADE,
  "properties" jsonb NOT NULL DEFAULT '{}',
  "created_at" timestamptz NOT NULL DEFAULT now()
);
-- index IN_CATEGORY by source
CREATE INDEX "ix_bt_8d0527dce35f6a67" ON "s_test"."IN_CATEGORY" ("source_id", "target_id");
-- index IN_CATEGORY by target
CREATE INDEX "ix_bt_6ac1232dfba44379" ON "s_test"."IN_CATEGORY" ("target_id", "source_id");
-- index IN_CATEGORY by source in creation order
CREATE INDEX "ix_bt_1c0622b6b7970125" ON "s_test"."IN_CATEGORY" ("source_id", "created_at", "id");
-- index IN_CATEGORY by target in creation order
CREATE INDEX "ix_bt_4984ea1a57a6131f" ON "s_test"."IN_CATEGORY" ("target_id", "created_at", "id");
