package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/orchestration"
	"github.com/nodewright/nodewright/shared/provision"
)

func sample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "trigger", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func logger() (*bytes.Buffer, Env) {
	return &bytes.Buffer{}, Env{Cluster: "demo", ConfigHash: "abc"}
}

func TestProvisionHandle(t *testing.T) {
	other := []byte(`{"source":"nodewright.webhook","cluster":"someone-else","namespace":"default","name":"p","time":"2026-11-23T12:00:00Z"}`)
	cases := []struct {
		name      string
		raw       []byte
		wantErr   bool
		wantSetup bool
		wantLog   string
	}{
		{"schedule", sample(t, "schedule.json"), true, true, `"source":"schedule"`},
		{"webhook hint", sample(t, "webhook-hint.json"), true, true, `"source":"webhook"`},
		{"hint for another cluster", other, false, false, "provision hint for another cluster"},
		{"garbage", []byte(`{"hello":1}`), true, false, "unreadable provision trigger"},
		{"not json", []byte(`nope`), true, false, "unreadable provision trigger"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			buf, env := logger()
			setups := 0
			h := Provision{Env: env, Log: NewLogger(buf, "provision", "info"), Setup: func(context.Context) (*provision.Reconciler, error) {
				setups++
				return nil, errors.New("no cluster here")
			}}
			err := h.Handle(context.Background(), tc.raw)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v", err)
			}
			if (setups > 0) != tc.wantSetup {
				t.Fatalf("%d set-ups: a garbage or foreign trigger must not reach the cluster; a valid one must", setups)
			}
			if !strings.Contains(buf.String(), tc.wantLog) || !strings.Contains(buf.String(), `"function":"provision"`) {
				t.Fatalf("log %s lacks %s", buf.String(), tc.wantLog)
			}
		})
	}
}

func TestConsolidationHandle(t *testing.T) {
	buf, env := logger()
	setups := 0
	h := Consolidation{Env: env, Log: NewLogger(buf, "consolidation", ""), Setup: func(context.Context) (*orchestration.Run, error) {
		setups++
		return nil, errors.New("no cluster here")
	}}
	if err := h.Handle(context.Background(), sample(t, "spot-interruption.json")); err == nil || setups != 0 {
		t.Fatalf("a spot warning taken for a schedule: %v, %d set-ups", err, setups)
	}
	if err := h.Handle(context.Background(), sample(t, "schedule.json")); err == nil || setups != 1 {
		t.Fatalf("schedule: %v, %d set-ups; want the set-up's error", err, setups)
	}
	if !strings.Contains(buf.String(), "consolidation set-up failed") {
		t.Fatalf("log %s", buf.String())
	}
}

func TestInterruptionBatchFailsOnlyBadItems(t *testing.T) {
	buf, env := logger()
	h := Interruption{Env: env, Log: NewLogger(buf, "interruption", "debug")}
	ev := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: `{"id":"e1","source":"aws.ec2","detail-type":"EC2 AMI State Change","detail":{}}`},
		{MessageId: "m2", Body: "not json"},
		{MessageId: "m3", Body: `{"id":"e3","source":"aws.s3","detail-type":"Object Created","detail":{}}`},
		{MessageId: "m4", Body: `{"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":{"instance-id":"bogus"}}`},
	}}
	resp, err := h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	want := []events.SQSBatchItemFailure{{ItemIdentifier: "m2"}, {ItemIdentifier: "m4"}}
	if !reflect.DeepEqual(resp.BatchItemFailures, want) {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	// The response must serialise the way Lambda's SQS integration reads it.
	b, _ := json.Marshal(resp)
	if string(b) != `{"batchItemFailures":[{"itemIdentifier":"m2"},{"itemIdentifier":"m4"}]}` {
		t.Fatalf("response %s", b)
	}
	if !strings.Contains(buf.String(), `"kind":"Unknown"`) || !strings.Contains(buf.String(), `invalid instance-id`) {
		t.Fatalf("log %s", buf.String())
	}
}

func TestRecoveredTurnsPanicIntoError(t *testing.T) {
	buf, _ := logger()
	log := NewLogger(buf, "x", "info")
	err := func() (err error) {
		defer recovered(log, &err)
		var m map[string]int
		m["x"]++ // nil map write panics
		return nil
	}()
	if err == nil || !strings.Contains(err.Error(), "panic") || !strings.Contains(buf.String(), "stack") {
		t.Fatalf("err %v log %s", err, buf.String())
	}
}

func TestEnvFrom(t *testing.T) {
	env := map[string]string{names.EnvClusterName: "c", names.EnvTableName: "t", names.EnvQueueURL: "q",
		names.EnvConfigDir: "/opt/x", names.EnvConfigHash: "h"}
	got := EnvFrom(func(k string) string { return env[k] })
	if got != (Env{Cluster: "c", Table: "t", QueueURL: "q", ConfigDir: "/opt/x", ConfigHash: "h"}) {
		t.Fatalf("%+v", got)
	}
}

func TestNewLoggerLevels(t *testing.T) {
	for level, debugShown := range map[string]bool{"debug": true, "DEBUG": true, "info": false, "warn": false, "error": false, "": false, "bogus": false} {
		var buf bytes.Buffer
		NewLogger(&buf, "f", level).Debug("d")
		if (buf.Len() > 0) != debugShown {
			t.Errorf("level %q: debug shown %v", level, buf.Len() > 0)
		}
	}
}
