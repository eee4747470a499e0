// Package contract holds the fault suite's fakes (test/faults) to the real
// services: the calls of faults.DynamoContract and faults.EC2Contract,
// made to DynamoDB and EC2 as moto serves them behind the local cloud's AWS
// front (an AWS-only local cloud: moto and the front, no Kubernetes),
// must be answered as the fakes answer them. It needs the local cloud's
// tools (~/.cache/nodewright/tools, `make tools`): without them it fails
// where CI is set and skips, saying why, elsewhere.
package contract

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/nodewright/nodewright/test/faults"
	"github.com/nodewright/nodewright/test/localcloud"
)

func TestFakesAgainstMoto(t *testing.T) {
	if _, err := os.Stat(localcloud.ToolsDir()); err != nil {
		// In CI the tools are built before the tests: their absence is a
		// failure there, never a pass.
		if os.Getenv("CI") != "" {
			t.Fatalf("the local cloud's tools are not built (%s): %v", localcloud.ToolsDir(), err)
		}
		t.Skipf("the local cloud's tools are not built (%s, `make tools`): the fakes are not held to moto here", localcloud.ToolsDir())
	}
	cloud := localcloud.StartForTest(t, localcloud.Options{AWSOnly: true, Cluster: "contract"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := cloud.AWSConfig()

	moto := faults.DynamoContract(ctx, dynamodb.NewFromConfig(cfg), cloud.Names.Table, "contract")
	fakeDB, fakeEC2 := faults.NewDirectFakes()
	fake := faults.DynamoContract(ctx, fakeDB, "nodewright-state", "contract")
	if !reflect.DeepEqual(moto, faults.DynamoExpected) || !reflect.DeepEqual(fake, moto) {
		t.Errorf("DynamoDB (moto):\n  %s\nfake:\n  %s\nexpected:\n  %s", strings.Join(moto, "\n  "), strings.Join(fake, "\n  "), strings.Join(faults.DynamoExpected, "\n  "))
	}

	image := cloud.Seeded.AMIs["amd64"]
	realEC2 := faults.EC2Contract(ctx, ec2.NewFromConfig(cfg), "contract", image, "contract-token")
	fakeOut := faults.EC2Contract(ctx, fakeEC2, "test-cluster", image, "contract-token")
	at := func(lines []string, i int) string {
		if i < len(lines) {
			return lines[i]
		}
		return "(none)"
	}
	for i, want := range faults.EC2Expected {
		if got, fk := at(realEC2, i), at(fakeOut, i); got != want || fk != want {
			t.Errorf("EC2 call %d: moto (behind the front) %q, fake %q, want %q", i, got, fk, want)
		}
	}
	if len(realEC2) != len(faults.EC2Expected) || len(fakeOut) != len(faults.EC2Expected) {
		t.Errorf("EC2: moto answered %d calls, the fake %d, want %d", len(realEC2), len(fakeOut), len(faults.EC2Expected))
	}
}
