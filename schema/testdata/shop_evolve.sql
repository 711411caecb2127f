-- drop relationship IN_CATEGORY and its edges [DESTRUCTIVE]
DROP TABLE "s_test"."IN_CATEGORY";
-- rebuild full-text column of Product
ALTER TABLE "s_test"."Product" DROP COLUMN "_search";
-- drop field Product.price and its values [DESTRUCTIVE]
ALTER TABLE "s_test"."Product" DROP COLUMN "price";
-- add field Product.sku
ALTER TABLE "s_test"."Product" ADD COLUMN "sku" text;
-- uq index on Product.sku
CREATE UNIQUE INDEX "ix_uq_5411285ab096172c" ON "s_test"."Product" ("sku");
-- add field Product.rating
ALTER TABLE "s_test"."Product" ADD COLUMN "rating" bigint DEFAULT 3 NOT NULL;
