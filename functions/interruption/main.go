// Command interruption is the interruption Lambda function (provided.al2023, arm64). It
// wires the environment, a JSON logger, the shared set-up and the queue
// (shared/redelivery: a failed message comes back within
// names.InterruptionRetryVisibility) to the handler in shared/handlers; the
// set-up runs on the first invocation and the warm container keeps it. The
// recheck queue (its URL and ARN) is wired the same way.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/nodewright/nodewright/shared/handlers"
	"github.com/nodewright/nodewright/shared/interruption"
	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/redelivery"
	"github.com/nodewright/nodewright/shared/setup"
)

func main() {
	log := handlers.NewLogger(os.Stdout, "interruption", os.Getenv(names.EnvLogLevel))
	h := &handlers.Interruption{
		Env: handlers.EnvFrom(os.Getenv),
		Log: log,
		Setup: func(ctx context.Context) (*interruption.Deps, error) {
			o, err := setup.Lambda(ctx, os.Getenv, os.Stdout, log)
			if err != nil {
				return nil, err
			}
			return setup.Interruption(ctx, o)
		},
	}
	// Without the SDK configuration the set-up fails too, and every batch
	// with it; failed messages then come back after the queue's visibility.
	cfg, err := setup.LambdaAWSConfig(os.Getenv)
	switch url := os.Getenv(names.EnvQueueURL); {
	case err != nil:
		log.Error("no SQS client: failed messages come back after the queue's visibility timeout", "error", err)
	case url == "":
		log.Error("no queue URL: failed messages come back after the queue's visibility timeout", "env", names.EnvQueueURL)
	default:
		h.Queue = redelivery.Queue{API: sqs.NewFromConfig(cfg), URL: url}
	}
	// The recheck queue's batches (names.InterruptionRecheckDelay) are
	// told apart by their event source ARN.
	h.RecheckARN = os.Getenv(names.EnvRecheckQueueARN)
	switch url := os.Getenv(names.EnvRecheckQueueURL); {
	case h.RecheckARN == "":
		log.Error("no recheck queue ARN: recheck deliveries are handled as first deliveries", "env", names.EnvRecheckQueueARN)
	case url == "":
		log.Error("no recheck queue URL: a recheck delivery's message is not held while it is worked on", "env", names.EnvRecheckQueueURL)
	case err == nil:
		h.RecheckQueue = redelivery.Queue{API: sqs.NewFromConfig(cfg), URL: url}
	}
	lambda.Start(h.Handle)
}
