package rotation

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
)

// fakeSecret models one secret's versions and their stages as Secrets
// Manager keeps them (moving AWSCURRENT labels the old version AWSPREVIOUS).
type fakeSecret struct {
	values   map[string]string
	stages   map[string][]string
	rotation bool
	puts     int
	failPut  error
}

func newFakeSecret(current string) *fakeSecret {
	return &fakeSecret{values: map[string]string{"v1": current}, stages: map[string][]string{"v1": {StageCurrent}}, rotation: true}
}

func (f *fakeSecret) DescribeSecret(_ context.Context, in *secretsmanager.DescribeSecretInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.DescribeSecretOutput, error) {
	out := &secretsmanager.DescribeSecretOutput{RotationEnabled: aws.Bool(f.rotation), VersionIdsToStages: map[string][]string{}}
	for id, st := range f.stages {
		out.VersionIdsToStages[id] = slices.Clone(st)
	}
	return out, nil
}

func (f *fakeSecret) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	for id, st := range f.stages {
		if (in.VersionId == nil || *in.VersionId == id) && slices.Contains(st, aws.ToString(in.VersionStage)) {
			if v, ok := f.values[id]; ok {
				return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(v), VersionId: aws.String(id)}, nil
			}
		}
	}
	return nil, &smtypes.ResourceNotFoundException{Message: aws.String("not found")}
}

func (f *fakeSecret) PutSecretValue(_ context.Context, in *secretsmanager.PutSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error) {
	if f.failPut != nil {
		return nil, f.failPut
	}
	f.puts++
	id := aws.ToString(in.ClientRequestToken)
	f.values[id] = aws.ToString(in.SecretString)
	f.stages[id] = slices.Clone(in.VersionStages)
	return &secretsmanager.PutSecretValueOutput{}, nil
}

func (f *fakeSecret) UpdateSecretVersionStage(_ context.Context, in *secretsmanager.UpdateSecretVersionStageInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.UpdateSecretVersionStageOutput, error) {
	stage, to, from := aws.ToString(in.VersionStage), aws.ToString(in.MoveToVersionId), aws.ToString(in.RemoveFromVersionId)
	if stage == StageCurrent && from != "" {
		for id, st := range f.stages {
			f.stages[id] = slices.DeleteFunc(st, func(s string) bool { return s == "AWSPREVIOUS" })
		}
		f.stages[from] = append(slices.DeleteFunc(f.stages[from], func(s string) bool { return s == StageCurrent }), "AWSPREVIOUS")
	}
	f.stages[to] = append(slices.DeleteFunc(f.stages[to], func(s string) bool { return s == StagePending }), stage)
	return &secretsmanager.UpdateSecretVersionStageOutput{}, nil
}

func (f *fakeSecret) stage(stage string) string {
	for id, st := range f.stages {
		if slices.Contains(st, stage) {
			return f.values[id]
		}
	}
	return ""
}

func handler(f *fakeSecret) (*Handler, *bytes.Buffer) {
	var logs bytes.Buffer
	return &Handler{Client: f, Log: slog.New(slog.NewJSONHandler(&logs, nil))}, &logs
}

func step(t *testing.T, h *Handler, name, version string) error {
	t.Helper()
	return h.Handle(context.Background(), events.SecretsManagerSecretRotationEvent{Step: name, SecretID: "arn:secret", ClientRequestToken: version})
}

// A rotation as Secrets Manager drives it: the new value becomes current,
// the old one previous; every step may run twice.
func TestRotation(t *testing.T) {
	f := newFakeSecret("old-token")
	h, logs := handler(f)
	// Secrets Manager labels the new version AWSPENDING before createSecret.
	f.stages["v2"] = []string{StagePending}
	for _, s := range []string{StepCreate, StepCreate, StepSet, StepTest, StepTest, StepFinish, StepFinish} {
		if err := step(t, h, s, "v2"); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	cur, prev := f.stage(StageCurrent), f.stage("AWSPREVIOUS")
	if prev != "old-token" || Check(cur) != nil || f.puts != 1 {
		t.Fatalf("current %q, previous %q after %d puts", cur, prev, f.puts)
	}
	if strings.Contains(logs.String(), cur) || strings.Contains(logs.String(), "old-token") {
		t.Fatalf("a token reached the logs: %s", logs.String())
	}
}

func TestRotationRefusals(t *testing.T) {
	f := newFakeSecret("old-token")
	h, _ := handler(f)
	f.stages["v2"] = []string{StagePending}
	for _, tc := range []struct {
		name    string
		prepare func()
		step    string
		version string
		want    string
	}{
		{"unknown version", nil, StepCreate, "v9", "not a version of the secret"},
		{"not pending", func() { f.stages["v3"] = nil }, StepCreate, "v3", "is not pending"},
		{"unknown step", nil, "dance", "v2", `unknown rotation step "dance"`},
		{"rotation off", func() { f.rotation = false }, StepCreate, "v2", "rotation is not enabled"},
		{"put fails", func() { f.rotation, f.failPut = true, errors.New("denied") }, StepCreate, "v2", "denied"},
		{"malformed pending value", func() { f.failPut, f.values["v2"] = nil, "short" }, StepTest, "v2", "5 characters, want 64"},
	} {
		if tc.prepare != nil {
			tc.prepare()
		}
		if err := step(t, h, tc.step, tc.version); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
	// The current version's steps are no-ops.
	if err := step(t, h, StepFinish, "v1"); err != nil {
		t.Fatalf("finish on the current version: %v", err)
	}
}

func TestNewToken(t *testing.T) {
	seen := map[string]bool{}
	counts := map[rune]int{}
	for i := 0; i < 200; i++ {
		tok, err := NewToken()
		if err != nil || Check(tok) != nil || seen[tok] {
			t.Fatalf("token %q: %v", tok, err)
		}
		seen[tok] = true
		for _, c := range tok {
			counts[c]++
		}
	}
	// 12,800 characters over 62 symbols: each about 206 times.
	if len(counts) != len(TokenAlphabet) {
		t.Fatalf("%d distinct characters, want %d", len(counts), len(TokenAlphabet))
	}
	for c, n := range counts {
		if n < 120 || n > 300 {
			t.Errorf("character %q drawn %d times", c, n)
		}
	}
	if Check(strings.Repeat("a", 63)+"!") == nil {
		t.Fatal("Check accepted punctuation")
	}
}
