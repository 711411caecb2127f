package operation

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/graphql/model/modeltest"
	"github.com/dds-project/dds/graphql/protocol"
)

// TestScalarVariablesCheckAgreesWithTheLibrary: whatever the prepared
// check of built-in scalar variables accepts, the library accepts too, with
// the same variables (defaults included); what it declines goes to the
// library, whose verdict stands.
func TestScalarVariablesCheckAgreesWithTheLibrary(t *testing.T) {
	eng := cachingEngine()
	m, err := model.Build(modeltest.Def(t, "shop.json"))
	if err != nil {
		t.Fatal(err)
	}
	const (
		byID  = `query($id: ID!) { product(id: $id) { id } }`
		float = `query($n: Float!, $s: String, $b: Boolean = true) { products(where: {price: {gte: $n}, name: {contains: $s, isNull: $b}}) { id } }`
		ints  = `query($n: Int) { products(limit: $n) { id } }`
	)
	cases := []struct {
		query  string
		vars   string
		fast   bool // accepted by the prepared check
		accept bool // accepted at all
	}{
		{byID, `{"id":"0190a3c4-0000-7000-8000-000000000000"}`, true, true},
		{byID, `{"id":7}`, false, true}, // an ID may be an integer: the library decides
		{byID, `{"id":null}`, false, false},
		{byID, `{}`, false, false},
		{byID, `{"id":"a","other":1}`, false, true},
		{byID, `{"id":true}`, false, false},
		{float, `{"n":1.5}`, true, true},
		{float, `{"n":2,"s":"x","b":false}`, true, true},
		{float, `{"n":2,"s":null,"b":null}`, true, true},
		{float, `{"n":"2"}`, false, false},
		{float, `{"n":2,"s":3}`, false, false},
		{float, `{"n":2,"b":"yes"}`, false, false},
		{float, `{"n":1e999}`, false, true}, // out of float64 range: the library decides
		{ints, `{"n":3}`, false, true},
		{ints, `{"n":1e3}`, false, true},
		{ints, `{"n":-2147483648}`, false, true},
	}
	for _, c := range cases {
		// Numbers arrive as json.Number, as the handler decodes them.
		var given map[string]any
		d := json.NewDecoder(strings.NewReader(c.vars))
		d.UseNumber()
		if err := d.Decode(&given); err != nil {
			t.Fatal(err)
		}
		req := protocol.Request{Query: c.query, Variables: given, VariablesJSON: []byte(c.vars)}
		p, res := eng.Prepare(context.Background(), m, req)
		if (res == nil) != c.accept {
			t.Errorf("%s %s: accepted = %v, want %v (%+v)", c.query, c.vars, res == nil, c.accept, res)
			continue
		}
		if p == nil {
			continue
		}
		if got := scalarsValid(p.Op.varDefs, given); got != c.fast {
			t.Errorf("%s %s: prepared check = %v, want %v", c.query, c.vars, got, c.fast)
		}
		lib, res := eng.validateVariables(context.Background(), m, p.Op, req)
		if res != nil {
			t.Errorf("%s %s: the library refuses what was accepted: %+v", c.query, c.vars, res.Errors)
			continue
		}
		if !reflect.DeepEqual(lib, p.Vars) {
			t.Errorf("%s %s: variables %v, the library's %v", c.query, c.vars, p.Vars, lib)
		}
	}
}

// TestIntVariablesAreIntegers: an Int variable takes only integers of 64
// bits (INTEGER fields are bigints; a variable is how a value beyond 32
// bits is sent), refused otherwise in a 400 naming the variable; the
// library checks only that the value is a number, and the executor
// ignored a limit of 1.5.
func TestIntVariablesAreIntegers(t *testing.T) {
	eng := cachingEngine()
	m, err := model.Build(modeltest.Def(t, "shop.json"))
	if err != nil {
		t.Fatal(err)
	}
	const (
		one  = `query($n: Int!) { products(limit: $n) { id } }`
		list = `query($n: [Int!]) { products(where: {stock: {in: $n}}) { id } }`
	)
	for _, c := range []struct{ query, vars, msg string }{
		{one, `{"n":1.5}`, `Variable "$n" got invalid value 1.5; Int cannot represent non-integer value: 1.5`},
		{list, `{"n":[9223372036854775808]}`, "non 64-bit signed integer value: 9223372036854775808"},
		{one, `{"n":1e400}`, "non 64-bit signed integer value: 1e400"},
		{one, `{"n":-1e19}`, "non 64-bit signed integer value"},
		{list, `{"n":[1,2.5]}`, "non-integer value: 2.5"},
		{list, `{"n":0.5}`, "non-integer value: 0.5"}, // a single value is a list of one
	} {
		var given map[string]any
		d := json.NewDecoder(strings.NewReader(c.vars))
		d.UseNumber()
		if err := d.Decode(&given); err != nil {
			t.Fatal(err)
		}
		_, res := eng.Prepare(context.Background(), m, protocol.Request{Query: c.query, Variables: given, VariablesJSON: []byte(c.vars)})
		if res == nil || len(res.Errors) != 1 || res.Errors[0].Extensions["code"] != "BAD_REQUEST" || !strings.Contains(res.Errors[0].Message, c.msg) {
			t.Errorf("%s %s: want BAD_REQUEST %q, got %+v", c.query, c.vars, c.msg, res)
		}
	}
}
