package schema

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/dds-project/dds/apperr"
)

// enumValueRe keeps ENUM values usable as GraphQL enum values.
var enumValueRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// Validate checks a definition and returns every problem at once, each
// naming the offending path (for example "entities[0].fields[2].type").
func Validate(d *Definition) *apperr.Error {
	var errs []apperr.FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, apperr.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if !ValidIdent(d.Name) {
		add("name", "must match ^[A-Za-z][A-Za-z0-9_]{0,62}$")
	}
	if len(d.Entities) == 0 {
		add("entities", "at least one entity is required")
	}
	if len(d.Entities) > MaxEntities {
		add("entities", "at most %d entities", MaxEntities)
	}
	names := map[string]string{} // lower-case table name -> path
	for i := range d.Entities {
		e := &d.Entities[i]
		p := fmt.Sprintf("entities[%d]", i)
		if !entityRe.MatchString(e.Name) {
			add(p+".name", "must be PascalCase: ^[A-Z][A-Za-z0-9_]{0,62}$")
		} else if prev, dup := names[strings.ToLower(e.Name)]; dup {
			add(p+".name", "%q collides with %s", e.Name, prev)
		} else {
			names[strings.ToLower(e.Name)] = p
		}
		if len(e.Fields) > MaxFields {
			add(p+".fields", "at most %d fields", MaxFields)
		}
		seen := map[string]bool{}
		for j := range e.Fields {
			f := &e.Fields[j]
			fp := fmt.Sprintf("%s.fields[%d]", p, j)
			validateField(f, fp, false, add)
			if e.SoftDelete && strings.EqualFold(f.Name, ColDeletedAt) {
				add(fp+".name", "%q is the system field of softDelete; rename the field or leave softDelete off", f.Name)
			}
			if seen[strings.ToLower(f.Name)] {
				add(fp+".name", "duplicate field %q", f.Name)
			}
			seen[strings.ToLower(f.Name)] = true
		}
	}
	relFields := map[string]bool{} // "Entity.field" for fromField/toField
	for i := range d.Relationships {
		r := &d.Relationships[i]
		p := fmt.Sprintf("relationships[%d]", i)
		if !ValidIdent(r.Name) {
			add(p+".name", "must match ^[A-Za-z][A-Za-z0-9_]{0,62}$")
		} else if prev, dup := names[strings.ToLower(r.Name)]; dup {
			add(p+".name", "%q collides with %s", r.Name, prev)
		} else {
			names[strings.ToLower(r.Name)] = p
		}
		for _, end := range []struct{ path, entity, field string }{{"from", r.From, r.FromField}, {"to", r.To, r.ToField}} {
			e, ok := d.Entity(end.entity)
			if !ok {
				add(p+"."+end.path, "unknown entity %q", end.entity)
				continue
			}
			if end.field == "" {
				continue
			}
			fp := p + "." + end.path + "Field"
			key := e.Name + "." + strings.ToLower(end.field)
			switch {
			case !ValidIdent(end.field):
				add(fp, "must match ^[A-Za-z][A-Za-z0-9_]{0,62}$")
			case IsReserved(end.field):
				add(fp, "%q is reserved", end.field)
			case e.SoftDelete && strings.EqualFold(end.field, ColDeletedAt):
				add(fp, "%q is the system field of softDelete on %s", end.field, e.Name)
			case relFields[key]:
				add(fp, "%q is already used on %s", end.field, e.Name)
			default:
				if _, clash := e.fieldFold(end.field); clash {
					add(fp, "%q collides with a field of %s", end.field, e.Name)
				}
				relFields[key] = true
			}
		}
		seen := map[string]bool{}
		for j := range r.Properties {
			f := &r.Properties[j]
			fp := fmt.Sprintf("%s.properties[%d]", p, j)
			validateField(f, fp, true, add)
			if seen[strings.ToLower(f.Name)] {
				add(fp+".name", "duplicate property %q", f.Name)
			}
			seen[strings.ToLower(f.Name)] = true
		}
	}
	return apperr.Fields(errs)
}

func (e *Entity) fieldFold(name string) (*Field, bool) {
	for i := range e.Fields {
		if strings.EqualFold(e.Fields[i].Name, name) {
			return &e.Fields[i], true
		}
	}
	return nil, false
}

func validateField(f *Field, p string, property bool, add func(string, string, ...any)) {
	if !ValidIdent(f.Name) {
		add(p+".name", "must match ^[A-Za-z][A-Za-z0-9_]{0,62}$")
	} else if IsReserved(f.Name) {
		add(p+".name", "%q is reserved (id, createdAt, updatedAt are system fields)", f.Name)
	}
	known := false
	for _, t := range FieldTypes {
		known = known || t == f.Type
	}
	if !known {
		add(p+".type", "unknown type %q", f.Type)
		return
	}
	if property && (f.Type == File || f.Type == Vector) {
		add(p+".type", "relationship properties cannot be %s", f.Type)
	}
	if f.Type == Enum {
		if len(f.Values) == 0 {
			add(p+".values", "ENUM needs at least one value")
		}
		seen := map[string]bool{}
		for k, v := range f.Values {
			if !enumValueRe.MatchString(v) {
				add(fmt.Sprintf("%s.values[%d]", p, k), "must match ^[A-Za-z_][A-Za-z0-9_]{0,62}$")
			}
			if seen[v] {
				add(fmt.Sprintf("%s.values[%d]", p, k), "duplicate value %q", v)
			}
			seen[v] = true
		}
	} else if len(f.Values) > 0 {
		add(p+".values", "only ENUM fields take values")
	}
	if f.Type == Vector {
		if f.VectorDimensions < 1 || f.VectorDimensions > MaxVectorDimensions {
			add(p+".vectorDimensions", "must be between 1 and %d", MaxVectorDimensions)
		}
	} else if f.VectorDimensions != 0 {
		add(p+".vectorDimensions", "only VECTOR fields take vectorDimensions")
	}
	if f.MaxLength != 0 && (f.Type != String && f.Type != Text || f.MaxLength < 0) {
		add(p+".maxLength", "only STRING and TEXT fields take a positive maxLength")
	}
	if f.List && (f.Type == Vector || f.Type == JSON || f.Type == File) {
		add(p+".list", "%s fields cannot be lists", f.Type)
	}
	if f.Searchable && (f.Type != String && f.Type != Text || f.List) {
		add(p+".searchable", "only STRING and TEXT fields (not lists) can be searchable")
	}
	if f.Unique && (f.List || f.Type == JSON || f.Type == Vector) {
		add(p+".unique", "%s fields cannot be unique", describe(f))
	}
	if property && (f.Unique || f.Searchable || f.Indexed) {
		add(p, "relationship properties take no unique, searchable or indexed option")
	}
	if f.Default != nil {
		if f.List || f.Type == Vector || f.Type == File {
			add(p+".default", "%s fields take no default", describe(f))
		} else if _, err := CoerceValue(f, f.Default); err != nil {
			add(p+".default", "%s", err.Error())
		}
	}
}

func describe(f *Field) string {
	if f.List {
		return "list"
	}
	return string(f.Type)
}
