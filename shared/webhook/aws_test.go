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
)

type fakeSM struct {
	out *secretsmanager.GetSecretValueOutput
	err error
	id  string
}

func (f *fakeSM) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	f.id = aws.ToString(in.SecretId)
	return f.out, f.err
}

func TestSecretsManagerFetch(t *testing.T) {
	sm := &fakeSM{out: &secretsmanager.GetSecretValueOutput{SecretString: aws.String("tok")}}
	v, err := SecretsManagerFetch(sm, "arn:secret")(context.Background())
	if err != nil || v != "tok" || sm.id != "arn:secret" {
		t.Fatalf("got %q %v id %q", v, err, sm.id)
	}
	sm.out = &secretsmanager.GetSecretValueOutput{SecretBinary: []byte{1}}
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
