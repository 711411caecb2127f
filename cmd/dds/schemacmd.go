package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dds-project/dds/schema"
)

// schemaCmd is `dds schema pull|diff|push`: schemas as code, over the
// public schema API (docs/schemas.md, Schemas as code). The file is a
// schema definition ({"name", "entities", "relationships"}) in JSON, or in
// YAML when its name ends in .yaml or .yml. The schema a file stands for is
// the tenant's schema of the same name.
//
//	pull  writes the tenant's schema (the active one, or --name) to the file
//	diff  prints the plan of applying the file (PUT ?dryRun=true), each
//	      destructive step marked; exits non-zero when there is one
//	push  applies the file: a new version of the schema of that name (a
//	      destructive plan needs --allow-data-loss), or a new schema
//
// A file may also hold the tenant's roles (schemaroles.go).
func schemaCmd(ctx context.Context, args []string, out io.Writer) error {
	const use = "usage: dds schema pull|diff|push [--url URL] [--key KEY] [--file schema.json|yaml] [--name NAME] [--allow-data-loss] [--activate]"
	if len(args) == 0 {
		return errors.New(use)
	}
	sub := args[0]
	fs := flag.NewFlagSet("schema "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	base := fs.String("url", envOr("DDS_URL", "http://127.0.0.1:8080"), "the DDS server (env DDS_URL)")
	key := fs.String("key", os.Getenv("DDS_API_KEY"), "an API key with schema scopes (env DDS_API_KEY)")
	file := fs.String("file", "schema.json", "the schema file (JSON, or YAML for .yaml/.yml; - for stdout/stdin)")
	name := fs.String("name", "", "pull: the schema to pull (default: the active one)")
	allow := fs.Bool("allow-data-loss", false, "push: apply a plan with destructive steps")
	activate := fs.Bool("activate", false, "push: make the schema the tenant's active one")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("%w\n%s", err, use)
	}
	if *key == "" {
		return errors.New("dds schema needs an API key: --key or DDS_API_KEY")
	}
	c := &apiClient{base: strings.TrimRight(*base, "/"), key: *key, http: &http.Client{Timeout: 60 * time.Second}}
	switch sub {
	case "pull":
		return schemaPull(ctx, c, *name, *file, out)
	case "diff":
		f, err := readSchemaFile(*file)
		if err != nil {
			return err
		}
		if f.Roles != nil { // schemaroles.go
			return schemaDiffWithRoles(ctx, c, f, out)
		}
		return schemaDiff(ctx, c, &f.Definition, out)
	case "push":
		f, err := readSchemaFile(*file)
		if err != nil {
			return err
		}
		if f.Roles != nil {
			return schemaPushWithRoles(ctx, c, f, *allow, *activate, out)
		}
		return schemaPush(ctx, c, &f.Definition, *allow, *activate, out)
	}
	return fmt.Errorf("unknown schema command %q\n%s", sub, use)
}

// storedSchema is a schema as GET /api/v1/schemas shows it.
type storedSchema struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version int    `json:"version"`
	Active  bool   `json:"active"`
	schema.Definition
}

func schemaPull(ctx context.Context, c *apiClient, name, file string, out io.Writer) error {
	list, err := c.schemas(ctx)
	if err != nil {
		return err
	}
	var pick *storedSchema
	for i := range list {
		if name == "" && list[i].Active || name != "" && list[i].Name == name {
			pick = &list[i]
		}
	}
	if pick == nil {
		if name == "" {
			return errors.New("the tenant has no active schema (name one with --name)")
		}
		return fmt.Errorf("the tenant has no schema named %q", name)
	}
	f := &schemaFile{Definition: pick.Definition}
	// The tenant's roles travel with the schema (schemaroles.go); a key
	// that may not read them pulls the schema alone.
	rl, err := c.tenantRoles(ctx)
	var ae *apiError
	switch {
	case err == nil:
		f.Roles = rl
	case errors.As(err, &ae) && ae.status == http.StatusForbidden:
		fmt.Fprintf(os.Stderr, "note: the key may not read roles (role:*:read); the file has the schema only\n")
	default:
		return err
	}
	b, err := encodeSchemaFile(file, f)
	if err != nil {
		return err
	}
	if file == "-" {
		_, err = out.Write(b)
		return err
	}
	if err := os.WriteFile(file, b, 0o644); err != nil { //nolint:gosec // G306: a schema file a team keeps in its repository
		return err
	}
	fmt.Fprintf(out, "pulled schema %s (version %d) and %d roles into %s\n", pick.Name, pick.Version, len(f.Roles), file)
	return nil
}

// planStep is a step of a schema plan as the API shows it.
type planStep struct {
	SQL         string `json:"sql"`
	Description string `json:"description"`
	Destructive bool   `json:"destructive"`
}

// errDestructive makes diff exit non-zero when the plan drops data.
var errDestructive = errors.New("the plan has destructive steps (push needs --allow-data-loss)")

func schemaDiff(ctx context.Context, c *apiClient, def *schema.Definition, out io.Writer) error {
	cur, err := c.named(ctx, def.Name)
	if err != nil {
		return err
	}
	if cur == nil {
		fmt.Fprintf(out, "schema %s does not exist: push creates it (%d entities, %d relationships)\n", def.Name, len(def.Entities), len(def.Relationships))
		return nil
	}
	var res struct {
		Plan struct {
			Steps []planStep `json:"steps"`
		} `json:"plan"`
	}
	if err := c.call(ctx, http.MethodPut, "/api/v1/schemas/"+url.PathEscape(cur.ID)+"?dryRun=true", def, &res); err != nil {
		return err
	}
	return printPlan(out, cur, res.Plan.Steps)
}

// printPlan prints a plan, each step on a line marked + (applies online)
// or ! (destructive), its SQL indented below; errDestructive when a step
// is destructive.
func printPlan(out io.Writer, cur *storedSchema, steps []planStep) error {
	if len(steps) == 0 {
		fmt.Fprintf(out, "schema %s (version %d): no changes\n", cur.Name, cur.Version)
		return nil
	}
	fmt.Fprintf(out, "schema %s (version %d): %d steps\n", cur.Name, cur.Version, len(steps))
	n := 0
	for _, s := range steps {
		mark := "+"
		if s.Destructive {
			mark, n = "!", n+1
		}
		fmt.Fprintf(out, "%s %s\n", mark, s.Description)
		for _, l := range strings.Split(s.SQL, "\n") {
			fmt.Fprintf(out, "      %s\n", l)
		}
	}
	if n > 0 {
		fmt.Fprintf(out, "%d destructive steps (marked !): they drop data\n", n)
		return errDestructive
	}
	return nil
}

func schemaPush(ctx context.Context, c *apiClient, def *schema.Definition, allow, activate bool, out io.Writer) error {
	cur, err := c.named(ctx, def.Name)
	if err != nil {
		return err
	}
	var got struct {
		ID      string `json:"id"`
		Version int    `json:"version"`
		Active  bool   `json:"active"`
		Plan    struct {
			Steps []planStep `json:"steps"`
		} `json:"plan"`
	}
	if cur == nil {
		if err := c.call(ctx, http.MethodPost, "/api/v1/schemas", def, &got); err != nil {
			return err
		}
		fmt.Fprintf(out, "created schema %s (version %d)\n", def.Name, got.Version)
	} else {
		path := "/api/v1/schemas/" + url.PathEscape(cur.ID)
		if allow {
			path += "?allowDataLoss=true"
		}
		err := c.call(ctx, http.MethodPut, path, def, &got)
		var ae *apiError
		if errors.As(err, &ae) && ae.status == http.StatusConflict && ae.plan != nil {
			_ = printPlan(out, cur, ae.plan)
			return fmt.Errorf("%s: nothing was applied; repeat with --allow-data-loss to apply it", ae.message)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "pushed schema %s: version %d -> %d (%d steps applied)\n", def.Name, cur.Version, got.Version, len(got.Plan.Steps))
	}
	if activate && !got.Active {
		if err := c.call(ctx, http.MethodPost, "/api/v1/schemas/"+url.PathEscape(got.ID)+"/activate", nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(out, "activated schema %s\n", def.Name)
	}
	return nil
}

// readSchemaFile reads a schema definition from a JSON or YAML file ("-":
// stdin, JSON or YAML). Unknown members are refused, so a typo in an
// option does not silently drop it.
func readSchemaFile(file string) (*schemaFile, error) {
	var b []byte
	var err error
	if file == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(file) //nolint:gosec // G304: the operator's own --file
	}
	if err != nil {
		return nil, err
	}
	if isYAML(file) || file == "-" && !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		var v any
		if err := yaml.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if b, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var def schemaFile
	if err := d.Decode(&def); err != nil {
		return nil, fmt.Errorf("%s is not a schema definition: %w", file, err)
	}
	if def.Name == "" {
		return nil, fmt.Errorf("%s: the schema has no name", file)
	}
	return &def, nil
}

func isYAML(file string) bool {
	ext := strings.ToLower(filepath.Ext(file))
	return ext == ".yaml" || ext == ".yml"
}

// encodeSchemaFile renders def for file: indented JSON, or YAML.
func encodeSchemaFile(file string, def *schemaFile) ([]byte, error) {
	b, err := json.MarshalIndent(def, "", "  ")
	if err != nil {
		return nil, err
	}
	if !isYAML(file) {
		return append(b, '\n'), nil
	}
	var buf bytes.Buffer
	e := yaml.NewEncoder(&buf)
	e.SetIndent(2)
	if err := e.Encode(orderedYAML(b)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// orderedYAML parses JSON into a yaml.Node, so the YAML keeps the JSON's
// member order (name, entities, relationships; name, type, ... per field).
func orderedYAML(b []byte) *yaml.Node {
	var n yaml.Node
	_ = yaml.Unmarshal(b, &n)
	setBlockStyle(&n)
	return &n
}

// setBlockStyle turns JSON's flow style into YAML's block style.
func setBlockStyle(n *yaml.Node) {
	n.Style &^= yaml.FlowStyle
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		n.Style &^= yaml.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		setBlockStyle(c)
	}
}

// apiClient calls the public API with a bearer credential.
type apiClient struct {
	base, key string
	http      *http.Client
}

// apiError is an error answer of the API; plan is the plan a refused
// destructive change carries.
type apiError struct {
	status  int
	message string
	plan    []planStep
}

func (e *apiError) Error() string { return fmt.Sprintf("%d: %s", e.status, e.message) }

func (c *apiClient) call(ctx context.Context, method, path string, body, dst any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	//nolint:gosec // G704: the URL is the operator's own --url/DDS_URL; reaching it is the command's purpose.
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req) //nolint:gosec // G704: see above
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var env struct {
			Error struct {
				Message string `json:"message"`
				Details []struct {
					Field, Message string
				} `json:"details"`
				Plan *struct {
					Steps []planStep `json:"steps"`
				} `json:"plan"`
			} `json:"error"`
		}
		ae := &apiError{status: resp.StatusCode, message: strings.TrimSpace(string(b))}
		if json.Unmarshal(b, &env) == nil && env.Error.Message != "" {
			ae.message = env.Error.Message
			for _, d := range env.Error.Details {
				ae.message += fmt.Sprintf("\n  %s: %s", d.Field, d.Message)
			}
			if env.Error.Plan != nil {
				ae.plan = env.Error.Plan.Steps
			}
		}
		return ae
	}
	if dst == nil {
		return nil
	}
	return json.Unmarshal(b, dst)
}

func (c *apiClient) schemas(ctx context.Context) ([]storedSchema, error) {
	var res struct {
		Schemas []storedSchema `json:"schemas"`
	}
	if err := c.call(ctx, http.MethodGet, "/api/v1/schemas", nil, &res); err != nil {
		return nil, err
	}
	for i := range res.Schemas { // the outer name shadows the definition's when decoding
		res.Schemas[i].Definition.Name = res.Schemas[i].Name
	}
	return res.Schemas, nil
}

// named is the tenant's schema named name; nil when there is none.
func (c *apiClient) named(ctx context.Context, name string) (*storedSchema, error) {
	list, err := c.schemas(ctx)
	if err != nil {
		return nil, err
	}
	for i := range list {
		if list[i].Name == name {
			return &list[i], nil
		}
	}
	return nil, nil
}
