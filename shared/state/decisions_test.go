package state

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestEncodeDecisionStaysWithinAnItem(t *testing.T) {
	many := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("default/pod-%05d", i)] = "pending: " + strings.Repeat("x", 100)
		}
		return m
	}
	for _, tc := range []struct {
		name        string
		d           Decision
		wantDetail  bool
		wantPods    int
		wantOmitted int
	}{
		{name: "small", d: Decision{Pods: many(3), Detail: json.RawMessage(`{"a":1}`)}, wantDetail: true, wantPods: 3},
		{name: "large detail", d: Decision{Pods: many(3), Detail: json.RawMessage(`"` + strings.Repeat("d", 400<<10) + `"`)}, wantPods: 3},
		{name: "many pods", d: Decision{Pods: many(5000), Detail: json.RawMessage(`{"a":1}`)}, wantPods: -1, wantOmitted: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := encodeDecision(&tc.d)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > maxDecisionBytes {
				t.Fatalf("%d bytes, want at most %d", len(b), maxDecisionBytes)
			}
			var got Decision
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if (got.Detail != nil) != tc.wantDetail {
				t.Errorf("detail kept %v, want %v", got.Detail != nil, tc.wantDetail)
			}
			if tc.wantPods >= 0 && len(got.Pods) != tc.wantPods {
				t.Errorf("%d pods, want %d", len(got.Pods), tc.wantPods)
			}
			if tc.wantOmitted == 0 && got.PodsOmitted != 0 {
				t.Errorf("%d pods omitted, want none", got.PodsOmitted)
			}
			if tc.wantOmitted < 0 {
				if got.PodsOmitted == 0 || len(got.Pods)+got.PodsOmitted != len(tc.d.Pods) {
					t.Errorf("kept %d and omitted %d of %d pods", len(got.Pods), got.PodsOmitted, len(tc.d.Pods))
				}
				if _, ok := got.Pods["default/pod-00000"]; !ok {
					t.Error("the first pod by name was dropped")
				}
			}
		})
	}
}

func TestNodeClaimOf(t *testing.T) {
	d := Decision{
		Pods: map[string]string{
			"a/p1": "nodeclaim default-x1 (m5.large, spot, us-east-1a, $0.0300/h; options: m5.large)",
			"a/p2": "pending: no NodePool tolerates taint t",
			"a/p3": "node ip-10-0-0-1",
		},
		NodeClaims: []DecidedNodeClaim{{Name: "default-x1", InstanceType: "m5.large"}},
	}
	for _, tc := range []struct {
		pod  string
		want string
	}{{"a/p1", "default-x1"}, {"a/p2", ""}, {"a/p3", ""}, {"a/none", ""}} {
		nc, ok := d.NodeClaimOf(tc.pod)
		if got := ""; ok {
			got = nc.Name
			if got != tc.want {
				t.Errorf("%s: %q, want %q", tc.pod, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("%s: none, want %q", tc.pod, tc.want)
		}
	}
}
