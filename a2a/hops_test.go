package a2a

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseHops(t *testing.T) {
	t.Parallel()
	meta := func(v string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(`{"`+HopsExtension+`":`+v+`}`), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	long := "[" + strings.Repeat(`{"url":"http://a/","contextId":"c"},`, MaxHopChain) + `{"url":"http://a/","contextId":"c"}]`
	tests := []struct {
		name  string
		meta  map[string]any
		want  Hops
		field string // "" when valid
	}{
		{"absent", nil, Hops{}, ""},
		{"other keys only", map[string]any{"x": 1.0}, Hops{}, ""},
		{"hop and chain", meta(`{"hop":2,"chain":[{"url":"http://a/","contextId":"c1"}]}`), Hops{Hop: 2, Chain: []HopLink{{URL: "http://a/", ContextID: "c1"}}}, ""},
		{"hop only", meta(`{"hop":0}`), Hops{}, ""},
		{"negative", meta(`{"hop":-1}`), Hops{}, ".hop"},
		{"string", meta(`{"hop":"99"}`), Hops{}, ".hop"},
		{"fraction", meta(`{"hop":1.5}`), Hops{}, ".hop"},
		{"huge", meta(`{"hop":1e300}`), Hops{}, ".hop"},
		{"missing hop", meta(`{"chain":[]}`), Hops{}, ".hop"},
		{"not an object", meta(`"junk"`), Hops{}, "]"},
		{"chain not a list", meta(`{"hop":1,"chain":"x"}`), Hops{}, ".chain"},
		{"link not an object", meta(`{"hop":1,"chain":[1]}`), Hops{}, ".chain"},
		{"link without url", meta(`{"hop":1,"chain":[{"contextId":"c"}]}`), Hops{}, ".chain"},
		{"link url not http", meta(`{"hop":1,"chain":[{"url":"file:///etc/passwd","contextId":"c"}]}`), Hops{}, ".chain"},
		{"link contextId not a string", meta(`{"hop":1,"chain":[{"url":"http://a/","contextId":7}]}`), Hops{}, ".chain"},
		{"chain too long", meta(`{"hop":1,"chain":` + long + `}`), Hops{}, ".chain"},
	}
	for _, tc := range tests {
		got, err := ParseHops(tc.meta)
		var he *HopsError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: ParseHops() error = %v, want nil", tc.name, err)
		case tc.field != "" && (!errors.As(err, &he) || !strings.HasSuffix(he.Field, tc.field) || !strings.HasPrefix(he.Field, "message.metadata[")):
			t.Errorf("%s: ParseHops() error = %v, want a *HopsError on a field ending %q", tc.name, err, tc.field)
		case tc.field == "":
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: ParseHops() (-want +got):\n%s", tc.name, diff)
			}
		}
	}
}

func TestHopsMerge(t *testing.T) {
	t.Parallel()
	a, b, c := HopLink{URL: "http://a/", ContextID: "1"}, HopLink{URL: "http://b/", ContextID: "2"}, HopLink{URL: "http://c/", ContextID: "3"}
	tests := []struct {
		name       string
		h, o, want Hops
	}{
		{"raised", Hops{Hop: 0}, Hops{Hop: 3, Chain: []HopLink{a, b}}, Hops{Hop: 3, Chain: []HopLink{a, b}}},
		{"never lowered", Hops{Hop: 3, Chain: []HopLink{a}}, Hops{Hop: 1, Chain: []HopLink{a, c}}, Hops{Hop: 3, Chain: []HopLink{a, c}}},
		{"zero", Hops{}, Hops{}, Hops{}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, tc.h.Merge(tc.o)); diff != "" {
			t.Errorf("%s: Merge (-want +got):\n%s", tc.name, diff)
		}
	}
}
