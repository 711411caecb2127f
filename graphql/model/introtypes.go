package model

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/wundergraph/graphql-go-tools/v2/pkg/astparser"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/astprinter"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/asttransform"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/introspection"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/operationreport"
)

// introStandIn replaces the "__" of the introspection types' names while
// the library generates their data: its generator leaves out every type,
// field and directive whose name starts with "__".
const introStandIn = "DDSINTRO_"

// introspectionTypes returns the introspection system's own types
// (__Schema, __Type, __Field, __InputValue, __EnumValue, __Directive,
// __TypeKind, __DirectiveLocation) as the library's introspection data,
// generated from the library's base schema under a stand-in name and
// renamed back, so `__schema { types }` lists them and `__type(name:
// "__Type")` answers, as the GraphQL specification and graphql-js do.
func introspectionTypes() ([]*introspection.FullType, error) {
	base, rep := astparser.ParseGraphqlDocumentString("type Query { _: Int }")
	if rep.HasErrors() {
		return nil, rep
	}
	if err := asttransform.MergeDefinitionWithBaseSchemaWithInternal(&base, false); err != nil {
		return nil, err
	}
	sdl, err := astprinter.PrintString(&base)
	if err != nil {
		return nil, err
	}
	sdl = regexp.MustCompile(`__([A-Z])`).ReplaceAllString(sdl, introStandIn+"$1")
	doc, rep := astparser.ParseGraphqlDocumentString(sdl)
	if rep.HasErrors() {
		return nil, rep
	}
	var data introspection.Data
	var vr operationreport.Report
	introspection.NewGenerator().Generate(&doc, &vr, &data)
	if vr.HasErrors() {
		return nil, vr
	}
	var stood []*introspection.FullType
	for _, t := range data.Schema.Types {
		if strings.HasPrefix(t.Name, introStandIn) {
			stood = append(stood, t)
		}
	}
	// Rename back everywhere (names, type references, descriptions) in one
	// pass over the data's JSON form.
	raw, err := json.Marshal(stood)
	if err != nil {
		return nil, err
	}
	var out []*introspection.FullType
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(raw), introStandIn, "__")), &out); err != nil {
		return nil, err
	}
	return out, nil
}
