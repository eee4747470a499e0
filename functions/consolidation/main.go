// Command consolidation is the consolidation Lambda function
// (provided.al2023, arm64). It wires the environment, a JSON logger and the
// shared set-up to the handler in shared/handlers; the set-up runs on the
// first invocation and the warm container keeps it.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/nodewright/nodewright/shared/handlers"
	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/orchestration"
	"github.com/nodewright/nodewright/shared/setup"
)

func main() {
	log := handlers.NewLogger(os.Stdout, "consolidation", os.Getenv(names.EnvLogLevel))
	h := &handlers.Consolidation{
		Env: handlers.EnvFrom(os.Getenv),
		Log: log,
		Setup: func(ctx context.Context) (*orchestration.Run, error) {
			o, err := setup.Lambda(ctx, os.Getenv, os.Stdout, log)
			if err != nil {
				return nil, err
			}
			return setup.Consolidation(ctx, o)
		},
	}
	lambda.Start(h.Handle)
}
