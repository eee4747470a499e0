// Command webhook is the pending-pod webhook Lambda function behind a Function
// URL (provided.al2023, arm64). It wires AWS clients, the secret cache, the
// hint gate and a JSON logger to the handler in shared/webhook.
package main

import (
	"context"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/nodewright/nodewright/shared/logging"
	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/webhook"
)

func main() {
	log := logging.New(os.Stdout, "webhook", os.Getenv(names.EnvLogLevel))
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("load AWS configuration", "error", err)
		os.Exit(1)
	}
	cluster := os.Getenv(names.EnvClusterName)
	fetch := webhook.SecretsManagerFetch(secretsmanager.NewFromConfig(cfg), os.Getenv(names.EnvWebhookSecretARN))
	h := &webhook.Handler{
		Cluster: cluster,
		Secret:  webhook.NewSecretCache(fetch, time.Now, webhook.CacheOptions{}),
		Invoker: webhook.LambdaInvoker{Client: awslambda.NewFromConfig(cfg), Function: os.Getenv(names.EnvProvisionFunction)},
		Hints: &webhook.DynamoDBHintGate{Client: dynamodb.NewFromConfig(cfg), Table: os.Getenv(names.EnvTableName),
			Cluster: cluster, Now: time.Now},
		Now: time.Now,
		Log: log,
	}
	lambda.Start(h.Handle)
}
