package trigger

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func sample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// subscription wraps a CloudWatch Logs batch the way Lambda receives it.
func subscription(t *testing.T, plain []byte) []byte {
	t.Helper()
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	if _, err := zw.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return []byte(`{"awslogs":{"data":"` + base64.StdEncoding.EncodeToString(zipped.Bytes()) + `"}}`)
}

func TestDecodeProvision(t *testing.T) {
	ts := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		name string
		raw  []byte
		want Provision
	}{
		{"schedule", sample(t, "schedule.json"), Provision{Source: SourceSchedule, Time: ts("2025-01-02T03:04:00Z")}},
		{"webhook hint", sample(t, "webhook-hint.json"), Provision{Source: SourceWebhook, Cluster: "demo",
			Time: ts("2025-01-02T03:04:05Z"), Pods: []PodRef{{Namespace: "default", Name: "inflate-7d9c8b6f5-abcde"}}}},
		{"webhook hint with the pod's resourceVersion", []byte(`{"source":"nodewright.webhook","cluster":"demo","namespace":"default","name":"web-0","resourceVersion":"4711","time":"2025-01-02T03:04:05Z"}`),
			Provision{Source: SourceWebhook, Cluster: "demo", Time: ts("2025-01-02T03:04:05Z"),
				Pods: []PodRef{{Namespace: "default", Name: "web-0", ResourceVersion: "4711"}}}},
		{"audit log batch", subscription(t, sample(t, "audit-events.json")), Provision{Source: SourceAuditLog,
			Time: ts("2025-01-02T03:04:07Z"),
			Pods: []PodRef{{Namespace: "batch", Name: "job-x"}, {Namespace: "default", Name: "inflate-7d9c8b6f5-abcde"}}}},
		{"control message", subscription(t, []byte(`{"messageType":"CONTROL_MESSAGE","logEvents":[{"id":"","timestamp":1,"message":"CWL CONTROL MESSAGE: Checking health of destination Lambda."}]}`)),
			Provision{Source: SourceAuditLog, Control: true}},
		{"unreadable and foreign audit events", subscription(t, []byte(`{"messageType":"DATA_MESSAGE","logEvents":[
			{"message":"not json"},
			{"message":"{\"verb\":\"get\"}"},
			{"message":"{\"verb\":\"create\",\"objectRef\":{\"resource\":\"configmaps\",\"namespace\":\"a\",\"name\":\"b\"}}"},
			{"message":"{\"verb\":\"create\",\"objectRef\":{\"resource\":\"pods\",\"namespace\":\"a\"}}"}]}`)),
			Provision{Source: SourceAuditLog, Skipped: 2, Pods: []PodRef{{Namespace: "a"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeProvision(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDecodeProvisionErrors(t *testing.T) {
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zeros := make([]byte, 1<<20)
	for i := 0; i < 17; i++ {
		if _, err := zw.Write(zeros); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		raw  string
		want string
	}{
		{"not json", `{`, "decode provision trigger"},
		{"unknown", `{"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning"}`, "not a schedule"},
		{"empty object", `{}`, "not a schedule"},
		{"schedule with bad time", `{"source":"aws.events","detail-type":"Scheduled Event","time":"yesterday"}`, "decode scheduled event"},
		{"hint without pod", `{"source":"nodewright.webhook","cluster":"c"}`, "namespace and name are required"},
		{"hint not an object", `{"source":"nodewright.webhook","name":7}`, "decode webhook hint"},
		{"hint without cluster", `{"source":"nodewright.webhook","namespace":"n","name":"p"}`, "cluster is required"},
		{"long source is truncated", `{"source":"` + strings.Repeat("s", 1<<20) + `"}`, `(1048576 bytes), detail-type ""`},
		{"awslogs bad base64", `{"awslogs":{"data":"***"}}`, "base64"},
		{"awslogs not gzip", `{"awslogs":{"data":"` + base64.StdEncoding.EncodeToString([]byte("plain")) + `"}}`, "gzip"},
		{"awslogs too large", `{"awslogs":{"data":"` + base64.StdEncoding.EncodeToString(bomb.Bytes()) + `"}}`, "more than"},
		{"awslogs bad type", string(subscription(t, []byte(`{"messageType":"OTHER"}`))), `message type "OTHER"`},
		{"awslogs bad json", string(subscription(t, []byte(`[`))), "decode audit log batch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeProvision([]byte(tc.raw))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDecodeSchedule(t *testing.T) {
	got, err := DecodeSchedule(sample(t, "schedule.json"))
	if err != nil || !got.Equal(time.Date(2025, 1, 2, 3, 4, 0, 0, time.UTC)) {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := DecodeSchedule(sample(t, "spot-interruption.json")); err == nil {
		t.Fatal("spot warning decoded as a schedule")
	}
	if _, err := DecodeSchedule([]byte(`[]`)); err == nil {
		t.Fatal("array decoded as a schedule")
	}
}

func TestDecodeInterruption(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		file string
		want Interruption
	}{
		{"spot-interruption.json", Interruption{KindSpotInterruption, "1e5527d7-bb36-4607-3370-4164db56a40e", at, []string{"i-0b662ef9931388ba0"}, "", at.Add(SpotNotice)}},
		{"rebalance-recommendation.json", Interruption{KindRebalanceRecommendation, "5d5a3a2b-8f7c-4d0e-9a8e-3b0f7f6b9c11", at, []string{"i-0123456789abcdef0"}, "", time.Time{}}},
		{"state-change.json", Interruption{KindStateChange, "7bf73129-1428-4cd3-a780-95db273d1602", at, []string{"i-0abcdef1234567890"}, "stopping", time.Time{}}},
		{"health-scheduled-change.json", Interruption{KindScheduledChange, "7bf73129-1428-4cd3-a780-95db273d1603", at, []string{"i-0123456789abcdef0", "i-0fedcba9876543210"}, "", time.Date(2025, 1, 11, 10, 0, 0, 0, time.UTC)}},
		{"capacity-reservation-interruption.json", Interruption{KindCapacityReservationInterruption, "12345678-1234-1234-1234-123456789012", at, []string{"i-0aaaabbbbccccdddd"}, "", at.Add(SpotNotice)}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			got, err := DecodeInterruption(sample(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// withDetail returns the spot sample with its source, detail-type and detail
// replaced.
func withDetail(t *testing.T, source, detailType, detail string) string {
	t.Helper()
	var ev map[string]any
	if err := json.Unmarshal(sample(t, "spot-interruption.json"), &ev); err != nil {
		t.Fatal(err)
	}
	ev["source"], ev["detail-type"] = source, detailType
	if detail == "" {
		delete(ev, "detail")
	} else {
		ev["detail"] = json.RawMessage(detail)
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDecodeInterruptionUnknownKinds(t *testing.T) {
	for _, body := range []string{
		withDetail(t, EC2Source, "EC2 AMI State Change", `{"x":1}`),
		withDetail(t, "aws.s3", DetailTypeSpotInterruption, `{"instance-id":"i-0123456789abcdef0"}`),
		// AWS Health events other than EC2's scheduled changes: not ours to
		// act on, and not malformed (they must not go to the DLQ).
		withDetail(t, HealthSource, DetailTypeHealth, `{"service":"RDS","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"i-0123456789abcdef0"}]}`),
		withDetail(t, HealthSource, DetailTypeHealth, `{"service":"EC2","eventTypeCategory":"issue","affectedEntities":[{"entityValue":"i-0123456789abcdef0"}]}`),
		withDetail(t, HealthSource, DetailTypeHealth, `{"service":"EC2","eventTypeCategory":"accountNotification"}`),
	} {
		got, err := DecodeInterruption([]byte(body))
		if err != nil || got.Kind != KindUnknown || len(got.InstanceIDs) != 0 {
			t.Errorf("unknown kind: %+v, %v; want KindUnknown and no error (acknowledged and counted)", got, err)
		}
	}
}

func TestDecodeInterruptionErrors(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"not json", `not json`, "decode interruption event"},
		{"no detail", withDetail(t, EC2Source, DetailTypeSpotInterruption, ""), "no detail"},
		{"bad instance id", withDetail(t, EC2Source, DetailTypeSpotInterruption, `{"instance-id":"i-XYZ; drop"}`), "invalid instance-id"},
		{"missing instance id", withDetail(t, EC2Source, DetailTypeRebalanceRecommendation, `{}`), "invalid instance-id"},
		{"detail not object", withDetail(t, EC2Source, DetailTypeCapacityReservationInterruption, `"text"`), "cannot unmarshal"},
		{"state change without state", withDetail(t, EC2Source, DetailTypeStateChange, `{"instance-id":"i-0123456789abcdef0"}`), "no state"},
		{"state change to no EC2 state", withDetail(t, EC2Source, DetailTypeStateChange, `{"instance-id":"i-0123456789abcdef0","state":"exploded"}`), `state "exploded" is not an EC2 instance state`},
		{"state in the wrong case", withDetail(t, EC2Source, DetailTypeStateChange, `{"instance-id":"i-0123456789abcdef0","state":"Running"}`), "not an EC2 instance state"},
		{"huge instance id is truncated", withDetail(t, EC2Source, DetailTypeSpotInterruption, `{"instance-id":"`+strings.Repeat("i", 2<<20)+`"}`), "... (2097152 bytes)"},
		{"health detail not object", withDetail(t, HealthSource, DetailTypeHealth, `[1]`), "cannot unmarshal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeInterruption([]byte(tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestHealthEventWithoutInstances(t *testing.T) {
	got, err := DecodeInterruption([]byte(withDetail(t, HealthSource, DetailTypeHealth,
		`{"service":"EC2","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"h-0123456789abcdef0"}]}`)))
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != KindScheduledChange || len(got.InstanceIDs) != 0 {
		t.Fatalf("got %+v", got)
	}
}

func FuzzDecodeInterruption(f *testing.F) {
	for _, n := range []string{"spot-interruption.json", "state-change.json", "health-scheduled-change.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := DecodeInterruption(body)
		if err != nil {
			return
		}
		for _, id := range got.InstanceIDs {
			if !instanceIDPattern.MatchString(id) {
				t.Fatalf("accepted instance id %q", id)
			}
		}
	})
}

func FuzzDecodeProvision(f *testing.F) {
	f.Add([]byte(`{"source":"aws.events","detail-type":"Scheduled Event"}`))
	f.Add([]byte(`{"awslogs":{"data":"H4sIAAAAAAAA/6tWKkktLlGyUlAqS8wpTVWqBQBxzmpTFAAAAA=="}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, _ = DecodeProvision(raw) // must not panic
	})
}

// Every state EC2 reports decodes; the list is EC2's own.
func TestInstanceStatesAreEC2s(t *testing.T) {
	var ec2States []string
	for _, s := range ec2types.InstanceStateNamePending.Values() {
		ec2States = append(ec2States, string(s))
	}
	got := InstanceStates()
	sort.Strings(got)
	sort.Strings(ec2States)
	if !reflect.DeepEqual(got, ec2States) {
		t.Fatalf("states %v, EC2's %v", got, ec2States)
	}
	for _, st := range got {
		in, err := DecodeInterruption([]byte(withDetail(t, EC2Source, DetailTypeStateChange, `{"instance-id":"i-0123456789abcdef0","state":"`+st+`"}`)))
		if err != nil || in.State != st {
			t.Errorf("state %s: %+v %v", st, in, err)
		}
	}
}
