// Package e2e holds the end-to-end tests that run on the local cloud.
package e2e

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/test/localcloud"
	"github.com/nodewright/nodewright/test/localcloud/proc"
)

// TestBringUp: the local cloud comes up; an instance launched with
// CreateFleet through the real SDK becomes a Node with the right labels,
// taints and allocatable; the inflate pods run on it; terminating the
// instance removes the Node; Close leaves no process behind.
func TestBringUp(t *testing.T) {
	start := time.Now()
	lc := localcloud.StartForTest(t, localcloud.Options{})
	t.Logf("bring-up: %s", time.Since(start).Round(10*time.Millisecond))
	per, total := lc.RSS()
	t.Logf("memory (RSS): total %d MiB %v", total>>20, mib(per))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	v, err := lc.Kube.Discovery().ServerVersion()
	if err != nil || v.GitVersion != localcloud.KubernetesVersion {
		t.Fatalf("server version = %v, %v; want %s", v, err, localcloud.KubernetesVersion)
	}

	dep := inflate(t)
	dep.Spec.Replicas = aws.Int32(3)
	dep.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "example.com/dedicated", Operator: corev1.TolerationOpEqual, Value: "inflate", Effect: corev1.TaintEffectNoSchedule}}
	if _, err := lc.Kube.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}

	ud := nodeUserData(lc.Cluster.Name, lc.Cluster.Endpoint, lc.Cluster.CAData,
		"karpenter.sh/nodepool=default,team=blue", "example.com/dedicated=inflate:NoSchedule")
	lt := launchTemplate(ctx, t, lc, "bringup", ud)
	ec2c := ec2.NewFromConfig(lc.AWSConfig())
	sn := lc.Seeded.Subnets[0]
	out, err := ec2c.CreateFleet(ctx, fleetInput(lc, lt, "on-demand", 1, override("m5.large", sn)))
	if err != nil {
		t.Fatalf("CreateFleet: %v", err)
	}
	if len(out.Errors) != 0 || len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
		t.Fatalf("CreateFleet: errors %+v instances %+v", out.Errors, out.Instances)
	}
	id := out.Instances[0].InstanceIds[0]

	node := waitNode(t, lc, "aws:///"+sn.Zone+"/"+id)
	checkNode(t, node, sn.Zone, lc.Options.Region)
	waitNodeReady(t, lc, node.Name)
	waitPodsRunning(t, lc, node.Name, 3)

	if _, err := ec2c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatalf("TerminateInstances: %v", err)
	}
	eventually(t, 30*time.Second, "node "+node.Name+" to go", func() (bool, error) {
		_, err := lc.Kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})

	procs := lc.Processes()
	if len(procs) != 6 {
		t.Errorf("processes = %d, want 6 (etcd, apiserver, controller manager, scheduler, kwok, moto)", len(procs))
	}
	if err := lc.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, p := range procs {
		if proc.GroupAlive(p.Pid) {
			t.Errorf("%s (pid %d) still running after Close", p.Name, p.Pid)
		}
	}
}

func mib(m map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		out[k] = v >> 20
	}
	return out
}

func waitNode(t *testing.T, lc *localcloud.Cloud, providerID string) *corev1.Node {
	t.Helper()
	var found *corev1.Node
	eventually(t, 30*time.Second, "node "+providerID, func() (bool, error) {
		nodes, err := lc.Kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for i := range nodes.Items {
			if nodes.Items[i].Spec.ProviderID == providerID {
				found = &nodes.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

func checkNode(t *testing.T, n *corev1.Node, zone, region string) {
	t.Helper()
	if !regexp.MustCompile(`^ip-10-0-1-\d+\.ec2\.internal$`).MatchString(n.Name) {
		t.Errorf("node name %q: want ip-10-0-1-N.ec2.internal", n.Name)
	}
	want := map[string]string{
		"node.kubernetes.io/instance-type":            "m5.large",
		"topology.kubernetes.io/zone":                 zone,
		"topology.kubernetes.io/region":               region,
		"kubernetes.io/arch":                          "amd64",
		"kubernetes.io/os":                            "linux",
		"kubernetes.io/hostname":                      n.Name,
		"karpenter.sh/capacity-type":                  "on-demand",
		"karpenter.k8s.aws/instance-family":           "m5",
		"karpenter.k8s.aws/instance-cpu":              "2",
		"karpenter.sh/nodepool":                       "default",
		"team":                                        "blue",
		"karpenter.k8s.aws/instance-category":         "m",
		"karpenter.k8s.aws/instance-generation":       "5",
		"karpenter.k8s.aws/instance-size":             "large",
		"karpenter.k8s.aws/instance-memory":           "8192",
		"karpenter.k8s.aws/instance-hypervisor":       "nitro",
		"karpenter.k8s.aws/instance-cpu-manufacturer": "intel",
	}
	for k, v := range want {
		if got := n.Labels[k]; got != v {
			t.Errorf("label %s = %q, want %q", k, got, v)
		}
	}
	taint := corev1.Taint{Key: "example.com/dedicated", Value: "inflate", Effect: corev1.TaintEffectNoSchedule}
	hasTaint := false
	for _, tt := range n.Spec.Taints {
		hasTaint = hasTaint || (tt.Key == taint.Key && tt.Value == taint.Value && tt.Effect == taint.Effect)
	}
	if !hasTaint {
		t.Errorf("taints %v: want %v", n.Spec.Taints, taint)
	}
	it, _ := catalog.Default().Get("m5.large")
	wantAlloc := it.Allocatable(nil) // the user data's maxPods 29 is m5.large's default
	if !equality.Semantic.DeepEqual(n.Status.Allocatable, wantAlloc) {
		t.Errorf("allocatable = %v, want %v", n.Status.Allocatable, wantAlloc)
	}
}

func waitNodeReady(t *testing.T, lc *localcloud.Cloud, name string) {
	t.Helper()
	eventually(t, 30*time.Second, "node "+name+" Ready", func() (bool, error) {
		n, err := lc.Kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

func waitPodsRunning(t *testing.T, lc *localcloud.Cloud, node string, n int) {
	t.Helper()
	eventually(t, 60*time.Second, "inflate pods Running on "+node, func() (bool, error) {
		pods, err := lc.Kube.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=inflate"})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == n, nil
	})
}
