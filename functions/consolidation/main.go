// Command consolidation is the consolidation Lambda function (provided.al2023, arm64). It
// wires the environment and a JSON logger to the handler in shared/handlers.
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/nodewright/nodewright/shared/handlers"
	"github.com/nodewright/nodewright/shared/names"
)

func main() {
	h := handlers.Consolidation{
		Env: handlers.EnvFrom(os.Getenv),
		Log: handlers.NewLogger(os.Stdout, "consolidation", os.Getenv(names.EnvLogLevel)),
	}
	lambda.Start(h.Handle)
}
