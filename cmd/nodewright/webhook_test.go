package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"log/slog"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/shared/rotation"
	"github.com/nodewright/nodewright/shared/webhook"
	"github.com/nodewright/nodewright/shared/webhookconfig"
	"github.com/nodewright/nodewright/test/localcloud"
)

const functionURL = "https://abcdefghijklmnop.lambda-url.us-east-1.on.aws/"

func writeManifest(t *testing.T) string {
	t.Helper()
	b, err := yaml.Marshal(webhookconfig.Configuration(webhookconfig.URLPlaceholder, 2))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "webhook.yaml")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWebhookApplyUsage(t *testing.T) {
	manifest := writeManifest(t)
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"webhook"}, 2, "want the apply subcommand"},
		{[]string{"webhook", "apply"}, 2, "missing -f, -url, -secret"},
		{[]string{"webhook", "apply", "-f", manifest, "-url", functionURL}, 2, "missing -secret"},
		{[]string{"webhook", "apply", "-f", manifest, "-url", functionURL, "-secret", "s", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"webhook", "apply", "-f", filepath.Join(t.TempDir(), "none.yaml"), "-url", functionURL, "-secret", "s"}, 1, "no such file"},
	} {
		code, _, stderr := runCLI(t, nil, "", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.stderr)
		}
	}
	if code, stdout, _ := runCLI(t, nil, "", "help", "webhook"); code != 0 || !strings.Contains(stdout, "server-side") {
		t.Errorf("help webhook: %d %q", code, stdout)
	}
}

// The registration against the real API server, with the token from
// Secrets Manager (moto) through a rotation: applied server-side, the
// kubectl last-applied copy an earlier client-side apply left removed, the
// token never printed.
func TestWebhookApplyOnTheLocalCloud(t *testing.T) {
	lc := localcloud.StartForTest(t, localcloud.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sm := secretsmanager.NewFromConfig(lc.AWSConfig())
	oldToken, err := rotation.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	created, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("nodewright-webhook-token"), SecretString: aws.String(oldToken)})
	if err != nil {
		t.Fatal(err)
	}
	secretArn := aws.ToString(created.ARN)

	// As the old ApplyWebhookCommand (kubectl apply, client-side) left it.
	vwc := lc.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	before := webhookconfig.Configuration(functionURL+"stale-token-from-a-client-side-apply", 2)
	lastApplied, _ := json.Marshal(before)
	before.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: string(lastApplied)}
	if _, err := vwc.Create(ctx, before, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatal(err)
	}

	manifest := writeManifest(t)
	c := cli{webhook: defaultWebhookDeps()}
	c.webhook.secrets = func(context.Context, string) (webhook.SecretsManagerAPI, error) { return sm, nil }
	apply := func(want string, removed bool) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := c.run([]string{"webhook", "apply", "-f", manifest, "-url", functionURL, "-secret", secretArn, "-kubeconfig", lc.Kubeconfig}, nil, &out, &errOut)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		if strings.Contains(out.String()+errOut.String(), want) {
			t.Fatalf("the token was printed: %s", out.String())
		}
		if got := strings.Contains(out.String(), "removed the kubectl last-applied copy"); got != removed {
			t.Errorf("output %q: removed the last-applied copy %v, want %v", out.String(), got, removed)
		}
		got, err := vwc.Get(ctx, webhookconfig.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if u := *got.Webhooks[0].ClientConfig.URL; u != functionURL+want {
			t.Fatalf("registration calls %s, want the secret's current token", webhookconfig.Redacted(u))
		}
		if _, ok := got.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
			t.Fatal("the last-applied annotation is still there")
		}
		if !managedByApply(got) {
			t.Fatalf("no server-side apply by %s in %+v", webhookconfig.FieldManager, got.ManagedFields)
		}
		if len(got.Webhooks[0].MatchConditions) != 3 || *got.Webhooks[0].FailurePolicy != admissionregistrationv1.Ignore {
			t.Fatalf("webhook %+v", got.Webhooks[0])
		}
	}
	apply(oldToken, true)

	// A rotation, driven as Secrets Manager drives the rotation function
	// (moto cannot invoke it): the pending version gets a fresh token and
	// becomes current; the old one becomes previous, which the webhook
	// still accepts, until the registration is applied again.
	// (RotateSecret turns rotation on; without a function moto only copies
	// the current value into a new current version.)
	if _, err := sm.RotateSecret(ctx, &secretsmanager.RotateSecretInput{SecretId: aws.String(secretArn), RotateImmediately: aws.Bool(false),
		RotationRules: &smtypes.RotationRulesType{AutomaticallyAfterDays: aws.Int64(30)}}); err != nil {
		t.Fatal(err)
	}
	newToken, _ := rotation.NewToken()
	const version = "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
	if _, err := sm.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(secretArn), ClientRequestToken: aws.String(version),
		SecretString: aws.String(newToken), VersionStages: []string{rotation.StagePending}}); err != nil {
		t.Fatal(err)
	}
	h := &rotation.Handler{Client: sm, Log: slog.New(slog.DiscardHandler)}
	for _, step := range []string{rotation.StepCreate, rotation.StepSet, rotation.StepTest, rotation.StepFinish} {
		if err := h.Handle(ctx, events.SecretsManagerSecretRotationEvent{Step: step, SecretID: secretArn, ClientRequestToken: version}); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	tokens, err := webhook.SecretsManagerFetch(sm, secretArn)(ctx)
	if err != nil || tokens.Current != newToken {
		t.Fatalf("after the rotation: current is not the new token (%v)", err)
	}
	if tokens.Previous != oldToken {
		t.Fatalf("after the rotation: the previous token is not the old one")
	}
	apply(newToken, false)
}

func managedByApply(o *admissionregistrationv1.ValidatingWebhookConfiguration) bool {
	for _, m := range o.ManagedFields {
		if m.Manager == webhookconfig.FieldManager && m.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}
