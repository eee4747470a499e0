package provision_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/test/harness"
)

// TestBottlerocketPool: a NodePool whose EC2NodeClass selects
// alias bottlerocket@latest gets Ready nodes: the alias resolves through
// Bottlerocket's public parameters (the local cloud publishes them), and the
// node registers with the labels and taints of its TOML user data.
func TestBottlerocketPool(t *testing.T) {
	t.Parallel()
	imagePool(t, "bottlerocket", "bottlerocket@latest", nil)
}

// TestAL2Pool: a NodePool whose EC2NodeClass selects alias al2@latest gets
// Ready nodes: the alias resolves through the EKS AL2 AMIs' public
// parameters (the local cloud publishes them), and the node registers with
// the labels and taints its user data's bootstrap.sh call passes the
// kubelet.
func TestAL2Pool(t *testing.T) {
	t.Parallel()
	imagePool(t, "al2", "al2@latest", nil)
}

// TestWindowsPool: a NodePool that requires kubernetes.io/os windows, of an
// EC2NodeClass that selects alias windows2022@latest, gets Ready Windows
// nodes: the alias resolves through the Windows AMI's public parameter (the
// local cloud publishes it), the plan takes x86 types only, and the node
// registers as Windows with the labels and taints of its PowerShell user
// data.
func TestWindowsPool(t *testing.T) {
	t.Parallel()
	nodes := imagePool(t, "windows", "windows2022@latest", func(np *apis.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			apis.NodeSelectorRequirementWithMinValues{Key: apis.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{apis.OSWindows}})
	})
	for name, n := range nodes {
		if n.Labels[apis.LabelOS] != apis.OSWindows || n.Labels[apis.LabelArch] != "amd64" || n.Status.NodeInfo.OperatingSystem != apis.OSWindows {
			t.Errorf("node %s: os %q arch %q (reports %q), want a windows amd64 node", name, n.Labels[apis.LabelOS], n.Labels[apis.LabelArch], n.Status.NodeInfo.OperatingSystem)
		}
	}
}

// imagePool makes an EC2NodeClass selecting alias and a tainted NodePool
// (group) of it, changed by edit, runs two pods that select and tolerate
// the pool, and checks that they run on nodes registered with the pool's
// labels and taint, which only the node's user data carries.
func imagePool(t *testing.T, group, alias string, edit func(*apis.NodePool)) map[string]*corev1.Node {
	c := ctx(t)
	pool, class := group, group+"-class"
	const groupLabel = "nodewright.test/group"
	dc, err := dynamic.NewForConfig(lc.REST)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := harness.Ctx(t)
		_ = dc.Resource(schema.GroupVersionResource{Group: apis.KarpenterGroup, Version: apis.Version, Resource: "nodepools"}).Delete(bg, pool, metav1.DeleteOptions{})
		_ = dc.Resource(schema.GroupVersionResource{Group: apis.AWSGroup, Version: apis.Version, Resource: "ec2nodeclasses"}).Delete(bg, class, metav1.DeleteOptions{})
	})
	nc := *deploy.NodeClasses[0]
	nc.ObjectMeta = metav1.ObjectMeta{Name: class}
	nc.Spec.AMIFamily = nil
	nc.Spec.AMISelectorTerms = []apis.AMISelectorTerm{{Alias: alias}}
	nc.Spec.BlockDeviceMappings = nil
	if err := harness.ApplyKarpenter(c, lc, &nc); err != nil {
		t.Fatal(err)
	}
	taint := corev1.Taint{Key: "test", Value: group, Effect: corev1.TaintEffectNoSchedule}
	testPool(t, pool, func(np *apis.NodePool) {
		np.Spec.Template.Spec.Taints = []corev1.Taint{taint}
		labels := map[string]string{groupLabel: group}
		for k, v := range np.Spec.Template.ObjectMeta.Labels {
			labels[k] = v
		}
		np.Spec.Template.ObjectMeta.Labels = labels
		ref := *np.Spec.Template.Spec.NodeClassRef
		ref.Name = class
		np.Spec.Template.Spec.NodeClassRef = &ref
		if edit != nil {
			edit(np)
		}
	})
	h := newHarness(t, harness.Options{})
	w := harness.Workload{Namespace: "default", Name: group + "-app", Replicas: 2, CPU: "500m", Memory: "512Mi",
		NodeSelector: map[string]string{groupLabel: group, apis.LabelNodePool: pool},
		Tolerations:  []corev1.Toleration{{Key: "test", Operator: corev1.TolerationOpEqual, Value: group, Effect: corev1.TaintEffectNoSchedule}}}
	if err := harness.Deploy(c, lc, w); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitUnschedulable(c, lc, "default", w.Name, 2, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := harness.Poll(c, 3*time.Minute, "the pods running on "+alias+" nodes", func() (bool, string, error) {
		if err := h.Hint(c, "default", w.Name); err != nil {
			return false, "", err
		}
		cnt, err := harness.Count(c, lc, "default", w.Name)
		return err == nil && cnt.Running == 2, fmt.Sprint(cnt), err
	}); err != nil {
		t.Fatal(err)
	}
	nodes, err := harness.NodesOf(c, lc, "default", w.Name)
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range nodes {
		if n.Labels[apis.LabelNodePool] != pool || n.Labels[apis.LabelEC2NodeClass] != class || n.Labels[groupLabel] != group {
			t.Errorf("node %s labels %v: want the pool's, its class's and %s=%s from the user data", name, n.Labels, groupLabel, group)
		}
		tainted := false
		for _, tn := range n.Spec.Taints {
			tainted = tainted || (tn.Key == taint.Key && tn.Value == taint.Value && tn.Effect == taint.Effect)
		}
		if !tainted {
			t.Errorf("node %s taints %v: want the pool's %v from the user data", name, n.Spec.Taints, taint)
		}
	}
	return nodes
}
