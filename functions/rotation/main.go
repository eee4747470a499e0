// Command rotation is the webhook token's Secrets Manager rotation function
// (provided.al2023, arm64). It wires the Secrets Manager client and a JSON
// logger to the handler in shared/rotation.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/nodewright/nodewright/shared/logging"
	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/rotation"
)

func main() {
	log := logging.New(os.Stdout, "rotation", os.Getenv(names.EnvLogLevel))
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("load AWS configuration", "error", err)
		os.Exit(1)
	}
	h := &rotation.Handler{Client: secretsmanager.NewFromConfig(cfg), Log: log}
	lambda.Start(h.Handle)
}
