package awscalls

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

func TestCallOf(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want Call
		ok   bool
	}{
		{&ssm.GetParametersInput{}, Call{"ssm", "GetParameters"}, true},
		{ssm.GetParametersInput{}, Call{"ssm", "GetParameters"}, true},
		{&ssm.GetParametersOutput{}, Call{}, false},
		{"x", Call{}, false},
		{nil, Call{}, false},
	} {
		got, ok := CallOf(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("CallOf(%T) = %v %v", tc.in, got, ok)
		}
	}
}

// A real client through the middleware: calls are recorded once each,
// failed ones too, and only on instrumented configurations.
func TestRecorder(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if r.Header.Get("X-Amz-Target") == "AmazonSSM.GetParameter" {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"__type":"ParameterNotFound","message":"no"}`))
			return
		}
		_, _ = w.Write([]byte(`{"Parameters":[],"InvalidParameters":[]}`))
	}))
	defer srv.Close()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""),
		BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1}
	rec := New()
	c := ssm.NewFromConfig(rec.Instrument(cfg))
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, err := c.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("x")}); err == nil {
		t.Fatal("GetParameter succeeded")
	}
	if _, err := ssm.NewFromConfig(cfg).GetParameters(ctx, &ssm.GetParametersInput{Names: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	want := map[Call]int{{"ssm", "GetParameters"}: 2, {"ssm", "GetParameter"}: 1}
	if got := rec.Calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	if got := rec.Outside(map[string]bool{"ssm:GetParameters": true}); !reflect.DeepEqual(got, []string{"ssm:GetParameter"}) {
		t.Fatalf("outside %v", got)
	}
	if len(cfg.APIOptions) != 0 {
		t.Fatal("Instrument changed the original configuration")
	}
}
