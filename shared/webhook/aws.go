package webhook

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// SecretsManagerAPI is the part of the Secrets Manager client the webhook uses.
type SecretsManagerAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// SecretsManagerFetch returns a FetchFunc that reads secretID's current
// string value.
func SecretsManagerFetch(client SecretsManagerAPI, secretID string) FetchFunc {
	return func(ctx context.Context) (string, error) {
		out, err := client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(secretID)})
		if err != nil {
			return "", fmt.Errorf("get secret value: %w", err)
		}
		if out.SecretString == nil {
			return "", errors.New("get secret value: secret has no string value")
		}
		return *out.SecretString, nil
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
