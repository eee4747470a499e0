package webhook

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
)

// SecretsManagerAPI is the part of the Secrets Manager client the webhook uses.
type SecretsManagerAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Secrets Manager's version stages the webhook accepts.
const (
	StageCurrent  = "AWSCURRENT"
	StagePrevious = "AWSPREVIOUS"
)

// SecretsManagerFetch returns a FetchFunc that reads secretID's current and
// previous string values (the previous one may not exist: a secret never
// rotated has none).
func SecretsManagerFetch(client SecretsManagerAPI, secretID string) FetchFunc {
	get := func(ctx context.Context, stage string) (string, error) {
		out, err := client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(secretID), VersionStage: aws.String(stage)})
		if err != nil {
			return "", fmt.Errorf("get secret value (%s): %w", stage, err)
		}
		if out.SecretString == nil {
			return "", fmt.Errorf("get secret value (%s): secret has no string value", stage)
		}
		return *out.SecretString, nil
	}
	return func(ctx context.Context) (Tokens, error) {
		cur, err := get(ctx, StageCurrent)
		if err != nil {
			return Tokens{}, err
		}
		prev, err := get(ctx, StagePrevious)
		var notFound *smtypes.ResourceNotFoundException
		if errors.As(err, &notFound) {
			return Tokens{Current: cur}, nil
		}
		if err != nil {
			return Tokens{}, err
		}
		return Tokens{Current: cur, Previous: prev}, nil
	}
}

// LambdaAPI is the part of the Lambda client the webhook uses.
type LambdaAPI interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// LambdaInvoker invokes a function asynchronously (InvocationType Event).
type LambdaInvoker struct {
	Client   LambdaAPI
	Function string
}

// InvokeAsync queues payload for the function; Lambda answers 202 at once.
func (l LambdaInvoker) InvokeAsync(ctx context.Context, payload []byte) error {
	out, err := l.Client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(l.Function),
		InvocationType: lambdatypes.InvocationTypeEvent,
		Payload:        payload,
	})
	if err != nil {
		return fmt.Errorf("invoke %s: %w", l.Function, err)
	}
	if out.StatusCode != 202 {
		return fmt.Errorf("invoke %s: status %d, want 202", l.Function, out.StatusCode)
	}
	return nil
}
