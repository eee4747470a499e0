package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/shared/webhook"
	"github.com/nodewright/nodewright/shared/webhookconfig"
)

const webhookUsage = `Usage: nodewright webhook apply -f FILE -url URL -secret ARN [flags]

Registers the pending-pod webhook in the cluster: reads the registration the
CDK app wrote (cdk.out/nodewright/<stack>/webhook.yaml), reads the webhook's
token from Secrets Manager with the AWS SDK (the current version), fills the
Function URL and the token into it, and applies it server-side with field
manager nodewright. The token appears on no command line and in no file, and
the object gets no kubectl last-applied copy (one left by an earlier
'kubectl apply' is removed). The stack's ApplyWebhookCommand output is this
command with the flags filled in.

Run it again within the token's rotation period after each rotation: the
webhook accepts the secret's current and previous tokens.

AWS credentials and region come from the usual AWS configuration (-region
overrides; a secret ARN names its own region). The cluster comes from
-kubeconfig (default: $KUBECONFIG, else ~/.kube/config) and -context.

Flags:
`

// webhookFlags are `nodewright webhook apply`'s options.
type webhookFlags struct {
	manifest, url, secret, region, kubeconfig, context string
	timeout                                            time.Duration
}

// webhookDeps reach AWS and the cluster (stand-ins in tests).
type webhookDeps struct {
	secrets func(ctx context.Context, region string) (webhook.SecretsManagerAPI, error)
	kube    func(kubeconfig, context string) (webhookconfig.Client, error)
}

func defaultWebhookDeps() webhookDeps {
	return webhookDeps{
		secrets: func(ctx context.Context, region string) (webhook.SecretsManagerAPI, error) {
			var opts []func(*config.LoadOptions) error
			if region != "" {
				opts = append(opts, config.WithRegion(region))
			}
			cfg, err := config.LoadDefaultConfig(ctx, opts...)
			if err != nil {
				return nil, fmt.Errorf("AWS configuration: %w", err)
			}
			return secretsmanager.NewFromConfig(cfg), nil
		},
		kube: func(kubeconfig, context string) (webhookconfig.Client, error) {
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = kubeconfig
			rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
			if err != nil {
				return nil, fmt.Errorf("kubeconfig: %w", err)
			}
			cs, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return nil, fmt.Errorf("kubernetes client: %w", err)
			}
			return cs.AdmissionregistrationV1().ValidatingWebhookConfigurations(), nil
		},
	}
}

func parseWebhookFlags(args []string, stderr io.Writer) (*webhookFlags, error) {
	wf := &webhookFlags{}
	fs := flag.NewFlagSet("nodewright webhook apply", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), webhookUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&wf.manifest, "f", "", "the registration `FILE` the CDK app wrote (cdk.out/nodewright/<stack>/webhook.yaml)")
	fs.StringVar(&wf.url, "url", "", "the webhook's Function `URL` (stack output WebhookFunctionUrl)")
	fs.StringVar(&wf.secret, "secret", "", "the token's secret `ARN` (stack output WebhookSecretArn)")
	fs.StringVar(&wf.region, "region", "", "AWS `REGION` of the secret (default: the ARN's, else the AWS configuration's)")
	fs.StringVar(&wf.kubeconfig, "kubeconfig", "", "kubeconfig `FILE` (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&wf.context, "context", "", "kubeconfig `CONTEXT` (default: the current one)")
	fs.DurationVar(&wf.timeout, "timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"-f", wf.manifest}, {"-url", wf.url}, {"-secret", wf.secret}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	if wf.region == "" {
		if a, err := arn.Parse(wf.secret); err == nil {
			wf.region = a.Region
		}
	}
	return wf, nil
}

// webhookCmd runs `nodewright webhook <subcommand>`.
func (c cli) webhookCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "apply" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, webhookUsage)
			return exitOK
		}
		fmt.Fprintf(stderr, "nodewright webhook: want the apply subcommand\n\n%s", webhookUsage)
		return exitUsage
	}
	wf, err := parseWebhookFlags(args[1:], stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "nodewright webhook apply: %v\n", err)
		return exitUsage
	}
	deps := c.webhook
	if deps.secrets == nil {
		deps = defaultWebhookDeps()
	}
	ctx, cancel := context.WithTimeout(context.Background(), wf.timeout)
	defer cancel()
	if err := applyWebhook(ctx, wf, deps, stdout); err != nil {
		fmt.Fprintf(stderr, "nodewright webhook apply: %v\n", err)
		return exitError
	}
	return exitOK
}

// applyWebhook fills the registration with the URL and the secret's current
// token and applies it.
func applyWebhook(ctx context.Context, wf *webhookFlags, deps webhookDeps, stdout io.Writer) error {
	b, err := os.ReadFile(wf.manifest)
	if err != nil {
		return err
	}
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		return fmt.Errorf("%s: %w", wf.manifest, err)
	}
	sm, err := deps.secrets(ctx, wf.region)
	if err != nil {
		return err
	}
	tokens, err := webhook.SecretsManagerFetch(sm, wf.secret)(ctx)
	if err != nil {
		return fmt.Errorf("read the token: %w", err)
	}
	token := strings.TrimSpace(tokens.Current)
	if len(token) < webhook.MinTokenLength {
		return fmt.Errorf("the secret's value is shorter than %d characters: the webhook would refuse it", webhook.MinTokenLength)
	}
	filled, err := webhookconfig.Fill(&cfg, wf.url, token)
	if err != nil {
		return fmt.Errorf("%s: %w", wf.manifest, err)
	}
	kc, err := deps.kube(wf.kubeconfig, wf.context)
	if err != nil {
		return err
	}
	res, err := webhookconfig.Apply(ctx, kc, filled)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "applied ValidatingWebhookConfiguration %s server-side (field manager %s): calls %s\n",
		res.Object.Name, webhookconfig.FieldManager, webhookconfig.Redacted(*filled.Webhooks[0].ClientConfig.URL))
	if res.RemovedLastApplied {
		fmt.Fprintln(stdout, "removed the kubectl last-applied copy an earlier client-side apply left (it held the token)")
	}
	return nil
}
