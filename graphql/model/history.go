package model

import "github.com/dds-project/dds/schema"

// historyRoot declares <one>History(id, first, after) for an entity with
// history: true, read with the entity's read scope (as REST's
// GET /dynamic/{Entity}/{id}/history). A version's record is the JSON
// object stored when it was written, not an entity object: a past version
// has no relationships or file metadata to resolve.
func (g *gen) historyRoot(e *schema.Entity, n entityNames, rf RootField) {
	if !e.History {
		return
	}
	page, version := HistoryTypes(e.Name)
	g.typ("type", version, "One recorded version of a "+e.Name+".", []string{
		"  id: ID!",
		"  \"create, update, delete or restore.\"",
		"  op: String!",
		"  at: DateTime!",
		"  \"The API key that wrote it (null for a user token).\"",
		"  keyId: ID",
		"  \"The end user who wrote it (null for an API key).\"",
		"  userId: ID",
		"  \"The fields this write changed.\"",
		"  changed: [String!]!",
		"  \"The record as written.\"",
		"  record: JSON!",
	})
	g.typ("type", page, "", []string{
		"  \"Newest first.\"",
		"  items: [" + version + "!]!",
		"  \"Pass as after for the next page; null on the last page.\"",
		"  nextCursor: String",
	})
	g.root(&g.query, n.One+"History", with(rf, KindHistory),
		"(id: ID!, \"1 to 500 versions (default 50).\" first: Int, after: String): "+page+"!")
}

// HistoryTypes are the names of an entity's history page and version types.
func HistoryTypes(entity string) (page, version string) {
	return entity + "History", entity + "Version"
}
