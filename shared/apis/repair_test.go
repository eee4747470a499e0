package apis

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// repairPoolDoc is a valid NodePool document with the given annotations.
func repairPoolDoc(annotations string) string {
	return "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: default\n  annotations:\n" + indent(annotations, "    ") +
		"spec:\n" + indent(template(), "  ")
}

func TestNodeRepairAnnotationsRefusedAtLoad(t *testing.T) {
	cases := []struct {
		name, annotations, want string
	}{
		{"switch not a bool", "nodewright.io/node-repair: 'off'\n",
			`metadata.annotations[nodewright.io/node-repair]: "off" must be "true" or "false"`},
		{"toleration not a duration", "nodewright.io/node-repair-toleration-ready: 'half an hour'\n",
			`metadata.annotations[nodewright.io/node-repair-toleration-ready]: "half an hour" is not a non-negative duration such as "45m"`},
		{"negative toleration", "nodewright.io/node-repair-toleration-kernel-ready: '-5m'\n",
			`metadata.annotations[nodewright.io/node-repair-toleration-kernel-ready]: "-5m" is not a non-negative duration such as "45m"`},
		{"unknown condition", "nodewright.io/node-repair-toleration-redy: 45m\n",
			`metadata.annotations[nodewright.io/node-repair-toleration-redy]: not a repair toleration: did you mean nodewright.io/node-repair-toleration-ready?`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(repairPoolDoc(tc.annotations)), "test.yaml")
			if err == nil {
				t.Fatal("loaded; want a refusal")
			}
			if !strings.Contains(err.Error(), npPrefix+tc.want) {
				t.Fatalf("error:\n%v\nwant it to hold:\n%s", err, npPrefix+tc.want)
			}
		})
	}
}

func TestNodeRepairSettings(t *testing.T) {
	cases := []struct {
		name        string
		annotations map[string]string
		enabled     bool
		invalid     bool
		tolerations map[corev1.NodeConditionType]time.Duration
	}{
		{"defaults: on, Karpenter's tolerations", nil, true, false, map[corev1.NodeConditionType]time.Duration{
			corev1.NodeReady: 30 * time.Minute, "AcceleratedHardwareReady": 10 * time.Minute, "StorageReady": 30 * time.Minute,
			"NetworkingReady": 30 * time.Minute, "KernelReady": 30 * time.Minute, "ContainerRuntimeReady": 30 * time.Minute,
			ConditionEC2StatusCheck: 30 * time.Minute}},
		{"opt out", map[string]string{AnnotationNodeRepair: "false"}, false, false, nil},
		{"explicitly on", map[string]string{AnnotationNodeRepair: "true"}, true, false, nil},
		{"per-pool tolerations", map[string]string{
			"nodewright.io/node-repair-toleration-ready":                      "45m",
			"nodewright.io/node-repair-toleration-accelerated-hardware-ready": "2m",
			"nodewright.io/node-repair-toleration-ec2-status-check":           "5m",
		}, true, false, map[corev1.NodeConditionType]time.Duration{
			corev1.NodeReady: 45 * time.Minute, "AcceleratedHardwareReady": 2 * time.Minute, ConditionEC2StatusCheck: 5 * time.Minute,
			"KernelReady": 30 * time.Minute}},
		{"invalid: repair off", map[string]string{"nodewright.io/node-repair-toleration-ready": "soon"}, false, true, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			np := &NodePool{}
			np.Name, np.Annotations = "p", tc.annotations
			got, err := np.NodeRepair()
			if (err != nil) != tc.invalid {
				t.Fatalf("err %v, want an error: %v", err, tc.invalid)
			}
			if got.Enabled != tc.enabled {
				t.Fatalf("enabled %v, want %v", got.Enabled, tc.enabled)
			}
			for cond, want := range tc.tolerations {
				found := false
				for _, p := range got.Policies {
					if p.Condition == cond {
						found = true
						if p.Toleration != want {
							t.Errorf("%s: toleration %s, want %s", cond, p.Toleration, want)
						}
					}
				}
				if !found {
					t.Errorf("%s: no policy", cond)
				}
			}
		})
	}
}

func TestRepairPolicyAnnotationKeys(t *testing.T) {
	want := []string{
		"nodewright.io/node-repair-toleration-ready",
		"nodewright.io/node-repair-toleration-accelerated-hardware-ready",
		"nodewright.io/node-repair-toleration-storage-ready",
		"nodewright.io/node-repair-toleration-networking-ready",
		"nodewright.io/node-repair-toleration-kernel-ready",
		"nodewright.io/node-repair-toleration-container-runtime-ready",
		"nodewright.io/node-repair-toleration-ec2-status-check",
	}
	ps := DefaultRepairPolicies()
	if len(ps) != len(want) {
		t.Fatalf("%d policies, want %d", len(ps), len(want))
	}
	for i, p := range ps {
		if got := p.AnnotationKey(); got != want[i] {
			t.Errorf("%s: key %s, want %s", p.Condition, got, want[i])
		}
	}
}

func TestNodeRepairOptOut(t *testing.T) {
	for v, want := range map[string]bool{"false": true, "False": true, "true": false, "": false, "no": false} {
		if got := NodeRepairOptOut(map[string]string{AnnotationNodeRepair: v}); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
}
