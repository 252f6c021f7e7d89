package aws_test

import (
	"context"
	"encoding/json"
	"github.com/nodekeeper/nodekeeper/internal/aws/allclients"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// calledPermissions calls every operation of every API interface the Clients hold (every call
// nodekeeper's code can make goes through one of them) on the in-memory AWS, and returns the IAM
// actions the fake recorded. Nothing here lists operations or permissions by hand: a method added
// to an interface is called, and the fake, which must implement it, records what it needs.
func calledPermissions(t *testing.T) []string {
	t.Helper()
	cloud := awsfake.New()
	fake := reflect.ValueOf(cloud)
	clients := reflect.TypeOf(allclients.Clients{})
	ctx := reflect.ValueOf(context.Background())
	apis := 0
	for i := range clients.NumField() {
		field := clients.Field(i)
		if field.Type.Kind() != reflect.Interface {
			continue
		}
		apis++
		if !fake.Type().Implements(field.Type) {
			t.Fatalf("awsfake.Cloud does not implement %s (Clients.%s)", field.Type, field.Name)
		}
		for m := range field.Type.NumMethod() {
			method := field.Type.Method(m)
			before := len(cloud.CalledPermissions())
			in := reflect.New(method.Type.In(1).Elem()) // the operation's input, zero
			fake.MethodByName(method.Name).Call([]reflect.Value{ctx, in})
			if after := len(cloud.CalledPermissions()); after != before+1 {
				t.Errorf("%s.%s: the fake recorded %d new IAM actions, want 1", field.Type, method.Name, after-before)
			}
		}
	}
	if apis < 3 {
		t.Fatalf("found %d API interfaces in Clients", apis)
	}
	return cloud.CalledPermissions()
}

// TestPolicyDocumentMatchesCalls: the IAM policy in docs/aws.md allows every action the code's
// calls need, as the fake records them, and nothing else; every action is read-only.
func TestPolicyDocumentMatchesCalls(t *testing.T) {
	doc, err := os.ReadFile("../../docs/aws.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```json\n")
	if !ok {
		t.Fatal("docs/aws.md has no ```json block")
	}
	block, _, _ := strings.Cut(rest, "```")
	var policy struct {
		Statement []struct {
			Effect string
			Action []string
		}
	}
	if err := json.Unmarshal([]byte(block), &policy); err != nil {
		t.Fatalf("the policy in docs/aws.md is not valid JSON: %v", err)
	}
	var allowed []string
	for _, s := range policy.Statement {
		if s.Effect != "Allow" {
			t.Errorf("statement with effect %q", s.Effect)
		}
		allowed = append(allowed, s.Action...)
	}
	want := calledPermissions(t)
	slices.Sort(allowed)
	if !slices.Equal(allowed, want) {
		t.Errorf("policy allows %v, the code calls %v", allowed, want)
	}
	for _, a := range allowed {
		if !strings.Contains(a, ":Describe") && !strings.Contains(a, ":Get") && !strings.Contains(a, ":List") && !strings.HasPrefix(a, "logs:") {
			t.Errorf("%s is not read-only", a)
		}
	}
}
