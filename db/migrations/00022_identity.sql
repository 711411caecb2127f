-- End users: roles (package roles), identity providers (package identity)
-- and API keys bound to a role.

-- +goose Up
-- A role of a tenant: the scopes a principal holding it may use, and its
-- row rules and field lists (definition, validated against the active
-- schema when stored). version grows on every change, so anything compiled
-- from a role (statement caches) is keyed by (name, version).
CREATE TABLE dds.roles (
    tenant_id  uuid NOT NULL REFERENCES dds.tenants(id) ON DELETE CASCADE,
    name       text NOT NULL,
    version    bigint NOT NULL DEFAULT 1,
    definition jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, name)
);

-- A key bound to a role acts within it; the role cannot be deleted while a
-- live key names it (deleting a role first clears it from revoked keys).
-- NO ACTION, not RESTRICT: it is checked at the end of the statement, so a
-- tenant's deletion cascading to both tables passes.
ALTER TABLE dds.api_keys ADD COLUMN role text;
ALTER TABLE dds.api_keys ADD CONSTRAINT api_keys_role_fk FOREIGN KEY (tenant_id, role)
    REFERENCES dds.roles (tenant_id, name) ON DELETE NO ACTION;

-- Role changes are broadcast (payload: tenant id) so every replica drops
-- its cached roles of the tenant.
-- +goose StatementBegin
CREATE FUNCTION dds.notify_roles_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('dds_roles', coalesce(NEW.tenant_id, OLD.tenant_id)::text);
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER roles_changed AFTER INSERT OR UPDATE OR DELETE ON dds.roles
    FOR EACH ROW EXECUTE FUNCTION dds.notify_roles_changed();

-- An OpenID Connect issuer whose tokens a tenant accepts. (issuer,
-- audience) is unique across the deployment: a token names its issuer and
-- audience, and so exactly one tenant.
CREATE TABLE dds.identity_providers (
    id           uuid PRIMARY KEY,
    tenant_id    uuid NOT NULL REFERENCES dds.tenants(id) ON DELETE CASCADE,
    name         text NOT NULL,
    issuer       text NOT NULL,
    jwks_url     text,              -- NULL: OIDC discovery from the issuer
    audience     text NOT NULL,
    user_claim   text NOT NULL,     -- JSON path of the user id, e.g. "sub"
    roles_claim  text,              -- JSON path of the roles array, e.g. "realm_access.roles"
    default_role text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (issuer, audience)
);
CREATE INDEX identity_providers_tenant ON dds.identity_providers (tenant_id);

-- Provider changes are broadcast (payload: provider id) so every replica
-- reloads its providers.
-- +goose StatementBegin
CREATE FUNCTION dds.notify_providers_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('dds_providers', coalesce(NEW.id, OLD.id)::text);
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER identity_providers_changed AFTER INSERT OR UPDATE OR DELETE ON dds.identity_providers
    FOR EACH ROW EXECUTE FUNCTION dds.notify_providers_changed();

-- +goose Down
DROP TABLE dds.identity_providers;
DROP FUNCTION dds.notify_providers_changed();
ALTER TABLE dds.api_keys DROP CONSTRAINT api_keys_role_fk;
ALTER TABLE dds.api_keys DROP COLUMN role;
DROP TABLE dds.roles;
DROP FUNCTION dds.notify_roles_changed();
