// Package contract holds the fault suite's fakes (test/faults) to the real
// services: the calls of faults.DynamoContract and faults.EC2Contract,
// made to DynamoDB and EC2 as moto serves them behind the local cloud's AWS
// front (an AWS-only local cloud: moto and the front, no Kubernetes),
// must be answered as the fakes answer them. It runs only where the local
// cloud's tools are built (~/.cache/nodewright/tools, `make tools`).
package contract

import (
	"context"
	"fmt"
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

func TestMain(m *testing.M) {
	if _, err := os.Stat(localcloud.ToolsDir()); err != nil {
		fmt.Fprintf(os.Stderr, "contract: the local cloud's tools are not built (%s): not run\n", localcloud.ToolsDir())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestFakesAgainstMoto(t *testing.T) {
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
		got, fk := at(realEC2, i), at(fakeOut, i)
		if got == want && fk == want {
			continue
		}
		if strings.HasPrefix(want, "the same token, another request") {
			// The local cloud's front answers a reused ClientToken with the
			// first call's result whatever the request: EC2 answers
			// IdempotentParameterMismatch (documented), as the fake does.
			t.Logf("known gap of the local cloud's front: %q (EC2 and the fake: %q)", got, want)
			if fk != want {
				t.Errorf("fake: %q, want %q", fk, want)
			}
			continue
		}
		t.Errorf("EC2 call %d: moto %q, fake %q, want %q", i, got, fk, want)
	}
}
