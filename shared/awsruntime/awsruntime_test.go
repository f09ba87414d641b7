package awsruntime

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadEnv(t *testing.T) {
	key := strings.Repeat("ab", 32)
	tests := []struct {
		name    string
		env     map[string]string
		want    Env
		wantErr string
	}{
		{"defaults", map[string]string{EnvTablePrefix: "p-"}, Env{TablePrefix: "p-", MetricsNS: "oncepost"}, ""},
		{"everything", map[string]string{EnvTablePrefix: "p-", EnvQueueURL: "q", EnvDeadLetterURL: "d", EnvStaticKey: key, EnvMaxReceives: "20", EnvMetricsNS: "ns"},
			Env{TablePrefix: "p-", QueueURL: "q", DeadLetterURL: "d", StaticKey: []byte(strings.Repeat("\xab", 32)), MaxReceives: 20, MetricsNS: "ns"}, ""},
		{"slot schedules", map[string]string{EnvScheduleGroup: "g", EnvTriggerFunctionARN: "fn", EnvSchedulerRoleARN: "role", EnvScheduleDeadLetterARN: "dlq"},
			Env{MetricsNS: "oncepost", ScheduleGroup: "g", TriggerFunctionARN: "fn", SchedulerRoleARN: "role", ScheduleDeadLetterARN: "dlq"}, ""},
		{"short key", map[string]string{EnvStaticKey: "abcd"}, Env{}, EnvStaticKey + ": want 64 hex digits"},
		{"not hex", map[string]string{EnvStaticKey: strings.Repeat("zz", 32)}, Env{}, EnvStaticKey},
		{"bad receives", map[string]string{EnvMaxReceives: "0"}, Env{}, EnvMaxReceives + `: "0" is not a positive number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadEnv(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ReadEnv = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Env (-want +got):\n%s", diff)
			}
		})
	}
}

// A function missing a setting says which, before any AWS call.
func TestMissingSettingsAreNamed(t *testing.T) {
	if _, err := New(context.Background(), Env{}, "test"); err == nil || !strings.Contains(err.Error(), EnvTablePrefix+" is not set") {
		t.Errorf("New without a table prefix = %v", err)
	}
	rt := &Runtime{Env: Env{TablePrefix: "p-"}}
	if _, err := rt.Queue(); err == nil || !strings.Contains(err.Error(), EnvQueueURL) || !strings.Contains(err.Error(), EnvDeadLetterURL) {
		t.Errorf("Queue without URLs = %v", err)
	}
	if _, err := rt.Workflows(); err == nil || !strings.Contains(err.Error(), EnvStateMachineARN) {
		t.Errorf("Workflows without an ARN = %v", err)
	}
	if _, err := rt.PostScheduler(); err == nil || !strings.Contains(err.Error(), EnvScheduleGroup) || !strings.Contains(err.Error(), EnvSchedulerRoleARN) {
		t.Errorf("PostScheduler without the schedules' settings = %v", err)
	}
}

// TestNewWithACustomCABundle: the SDK adds AWS_CA_BUNDLE's certificates
// only to its own client type, so the body-copying wrapper must come
// after the configuration is loaded (it once came before, and every
// function and CLI command failed where a CA bundle is set).
func TestNewWithACustomCABundle(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(bundle, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CA_BUNDLE", bundle)
	t.Setenv("AWS_REGION", "us-east-1")
	rt, err := New(context.Background(), Env{TablePrefix: "p-", StaticKey: make([]byte, 32), MetricsNS: "oncepost"}, "test")
	if err != nil {
		t.Fatalf("New with AWS_CA_BUNDLE set: %v", err)
	}
	if rt.AWS.HTTPClient == nil {
		t.Fatal("no HTTP client")
	}
}
