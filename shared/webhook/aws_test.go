package webhook

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
)

type fakeSM struct {
	// values by version stage; a stage absent answers ResourceNotFound.
	values map[string]*secretsmanager.GetSecretValueOutput
	err    error
	ids    []string
}

func (f *fakeSM) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	f.ids = append(f.ids, aws.ToString(in.SecretId)+"@"+aws.ToString(in.VersionStage))
	if f.err != nil {
		return nil, f.err
	}
	out, ok := f.values[aws.ToString(in.VersionStage)]
	if !ok {
		return nil, &smtypes.ResourceNotFoundException{Message: aws.String("no such version")}
	}
	return out, nil
}

func TestSecretsManagerFetch(t *testing.T) {
	sm := &fakeSM{values: map[string]*secretsmanager.GetSecretValueOutput{
		StageCurrent: {SecretString: aws.String("cur")}, StagePrevious: {SecretString: aws.String("prev")},
	}}
	v, err := SecretsManagerFetch(sm, "arn:secret")(context.Background())
	if err != nil || v != (Tokens{Current: "cur", Previous: "prev"}) || strings.Join(sm.ids, ",") != "arn:secret@AWSCURRENT,arn:secret@AWSPREVIOUS" {
		t.Fatalf("got %+v %v ids %v", v, err, sm.ids)
	}
	// A secret never rotated has no previous version.
	delete(sm.values, StagePrevious)
	if v, err := SecretsManagerFetch(sm, "a")(context.Background()); err != nil || v != (Tokens{Current: "cur"}) {
		t.Fatalf("no previous: %+v %v", v, err)
	}
	sm.values[StageCurrent] = &secretsmanager.GetSecretValueOutput{SecretBinary: []byte{1}}
	if _, err := SecretsManagerFetch(sm, "a")(context.Background()); err == nil || !strings.Contains(err.Error(), "no string value") {
		t.Fatalf("binary secret: %v", err)
	}
	sm.err = errors.New("denied")
	if _, err := SecretsManagerFetch(sm, "a")(context.Background()); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("error: %v", err)
	}
}

type fakeLambda struct {
	in     *lambda.InvokeInput
	status int32
	err    error
}

func (f *fakeLambda) Invoke(_ context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	f.in = in
	if f.err != nil {
		return nil, f.err
	}
	return &lambda.InvokeOutput{StatusCode: f.status}, nil
}

func TestLambdaInvoker(t *testing.T) {
	fl := &fakeLambda{status: 202}
	if err := (LambdaInvoker{Client: fl, Function: "prov"}).InvokeAsync(context.Background(), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if fl.in.InvocationType != lambdatypes.InvocationTypeEvent || aws.ToString(fl.in.FunctionName) != "prov" || string(fl.in.Payload) != `{}` {
		t.Fatalf("input %+v", fl.in)
	}
	fl.status = 200
	if err := (LambdaInvoker{Client: fl, Function: "prov"}).InvokeAsync(context.Background(), nil); err == nil {
		t.Fatal("status 200 accepted for an async invoke")
	}
	fl.err = errors.New("throttled")
	if err := (LambdaInvoker{Client: fl, Function: "prov"}).InvokeAsync(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "throttled") {
		t.Fatalf("err %v", err)
	}
}
