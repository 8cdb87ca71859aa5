package main

import (
	"errors"
	"testing"

	"github.com/a2a-gateway/gateway/server"
)

// TestStoreConfig: --store and GATEWAY_STORE select the PostgreSQL store; anything but a
// postgres:// URL is refused; empty keeps the bbolt ledger in --data-dir.
func TestStoreConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    string
		wantErr bool
	}{
		{name: "default bbolt", want: ""},
		{name: "flag", args: []string{"--store", "postgres://u:pw@db:5432/gw"}, want: "postgres://u:pw@db:5432/gw"},
		{name: "env", env: map[string]string{"GATEWAY_STORE": "postgresql://db/gw"}, want: "postgresql://db/gw"},
		{name: "not postgres", args: []string{"--store", "mysql://db/gw"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := parseServe(t, tt.args, tt.env)
			if err == nil {
				err = cfg.Validate()
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && cfg.Store != tt.want {
				t.Errorf("Store = %q, want %q", cfg.Store, tt.want)
			}
		})
	}
	if got := server.RedactURL("postgres://u:secret@db/gw"); got != "postgres://u:xxxxx@db/gw" {
		t.Errorf("the logged store URL = %q, want the password hidden", got)
	}
	var ue usageError
	if _, _, err := openStoreService(t.Context(), opsFlags{store: "file:///x"}, nil); !errors.As(err, &ue) {
		t.Errorf("openStoreService(file URL) error = %v, want a usage error", err)
	}
}
