// Command gen writes the event samples that wrap other samples: the
// CloudWatch Logs subscription delivery (base64 gzip of the decoded form),
// the Lambda Function URL request carrying the AdmissionReview, and the SQS
// batch of interruption events. Run from the events directory
// (`go generate ./events`).
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/nodewright/nodewright/events"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run() error {
	steps := []struct {
		out  string
		make func() (any, error)
	}{
		{events.AuditLogDelivery, auditDelivery},
		{events.FunctionURLAdmissionReview, functionURLRequest},
		{events.SQSInterruptionBatch, sqsBatch},
	}
	for _, s := range steps {
		v, err := s.make()
		if err != nil {
			return fmt.Errorf("%s: %w", s.out, err)
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("%s: %w", s.out, err)
		}
		if err := os.WriteFile(s.out, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// compact reads a sample and returns it as compact JSON.
func compact(name string) ([]byte, error) {
	b, err := events.Sample(name)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return buf.Bytes(), nil
}

func auditDelivery() (any, error) {
	raw, err := compact(events.AuditLogDecoded)
	if err != nil {
		return nil, err
	}
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return lambdaevents.CloudwatchLogsEvent{
		AWSLogs: lambdaevents.CloudwatchLogsRawData{Data: base64.StdEncoding.EncodeToString(zipped.Bytes())},
	}, nil
}

func functionURLRequest() (any, error) {
	body, err := compact(events.AdmissionReview)
	if err != nil {
		return nil, err
	}
	const urlID = "abcdefghijklmnopqrstuvwxyz012345"
	// The API server calls the webhook's clientConfig.url, whose path is the
	// token (no header: a webhook URL can carry none), and appends the
	// webhook's timeoutSeconds as a query parameter.
	path := "/" + events.SampleWebhookToken
	return lambdaevents.LambdaFunctionURLRequest{
		Version:        "2.0",
		RawPath:        path,
		RawQueryString: "timeout=2s",
		Headers: map[string]string{
			"content-type":    "application/json",
			"accept":          "application/json, */*",
			"content-length":  fmt.Sprint(len(body)),
			"host":            urlID + ".lambda-url.us-east-1.on.aws",
			"user-agent":      "kube-apiserver-admission",
			"x-amzn-trace-id": "Root=1-683c4140-0123456789abcdef01234567",
			"x-forwarded-for": "10.0.1.23",
		},
		QueryStringParameters: map[string]string{"timeout": "2s"},
		RequestContext: lambdaevents.LambdaFunctionURLRequestContext{
			AccountID:    "anonymous",
			RequestID:    "d6f3f2b1-7c1e-4a5b-9e8d-1f2a3b4c5d6e",
			APIID:        urlID,
			DomainName:   urlID + ".lambda-url.us-east-1.on.aws",
			DomainPrefix: urlID,
			Time:         "01/Jun/2025:12:00:00 +0000",
			TimeEpoch:    1748779200250,
			HTTP: lambdaevents.LambdaFunctionURLRequestContextHTTPDescription{
				Method:    "POST",
				Path:      path,
				Protocol:  "HTTP/1.1",
				SourceIP:  "10.0.1.23",
				UserAgent: "kube-apiserver-admission",
			},
		},
		Body:            string(body),
		IsBase64Encoded: false,
	}, nil
}

func sqsBatch() (any, error) {
	var recs []lambdaevents.SQSMessage
	for i, name := range []string{events.SpotInterruptionWarning, events.RebalanceRecommendation} {
		body, err := compact(name)
		if err != nil {
			return nil, err
		}
		recs = append(recs, lambdaevents.SQSMessage{
			MessageId:     fmt.Sprintf("059f36b4-87a3-44ab-83d2-66197552600%d", i),
			ReceiptHandle: fmt.Sprintf("AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a%d", i),
			Body:          string(body),
			Attributes: map[string]string{
				"ApproximateReceiveCount":          "1",
				"SentTimestamp":                    "1748779200000",
				"SenderId":                         "AIDAIENQZJOLO23YVJ4VO",
				"ApproximateFirstReceiveTimestamp": "1748779200010",
			},
			MessageAttributes: map[string]lambdaevents.SQSMessageAttribute{},
			EventSourceARN:    "arn:aws:sqs:us-east-1:123456789012:nodewright-local-interruption",
			EventSource:       "aws:sqs",
			AWSRegion:         "us-east-1",
		})
	}
	return lambdaevents.SQSEvent{Records: recs}, nil
}
