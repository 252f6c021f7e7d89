package typemeta

import (
	"encoding/json"
	"testing"
)

func TestMarshal(t *testing.T) {
	type doc struct {
		Name string `json:"name"`
		N    int    `json:"n,omitempty"`
	}
	for _, tc := range []struct {
		v    any
		want string
	}{
		{doc{Name: "a", N: 2}, `{"apiVersion":"nodekeeper.io/v1alpha1","kind":"K","name":"a","n":2}`},
		{struct{}{}, `{"apiVersion":"nodekeeper.io/v1alpha1","kind":"K"}`},
	} {
		b, err := Marshal("K", tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want || !json.Valid(b) {
			t.Errorf("got %s, want %s", b, tc.want)
		}
	}
	for _, bad := range []any{[]int{1}, "x", nil} {
		if _, err := Marshal("K", bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
