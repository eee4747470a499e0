package provision_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/nodeclaim"
	"github.com/nodewright/nodewright/test/harness"
)

const nodeClaimsPath = "/apis/karpenter.sh/v1/nodeclaims/"

// getNodeClaim reads a NodeClaim object as the cluster holds it (nil: none).
func getNodeClaim(ctx context.Context, name string) (*nodeclaim.NodeClaim, error) {
	raw, err := lc.Kube.Discovery().RESTClient().Get().AbsPath(nodeClaimsPath + name).DoRaw(ctx)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	nc := &nodeclaim.NodeClaim{}
	return nc, json.Unmarshal(raw, nc)
}

// TestDeleteNodeClaimDrainsAndTerminates: each record has a NodeClaim
// object that the sweep keeps in step (Ready once the node initialized,
// owned by its NodePool, with the template's annotations, which the Node
// also has); one deleted without its finalizer, as a CRD
// reinstall would, is made again from the record; `kubectl delete
// nodeclaim` drains the node, terminates the instance, and the object goes
// once the record has.
func TestDeleteNodeClaimDrainsAndTerminates(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	testPool(t, "ncdel", func(np *apis.NodePool) {
		np.Spec.Template.ObjectMeta.Annotations = map[string]string{"example.com/team": "ncdel"}
	})
	h := newHarness(t, harness.Options{})
	if err := harness.Deploy(c, lc, onPool("ncdel", "ncdelapp", 2, "1", "1Gi")); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitUnschedulable(c, lc, "default", "ncdelapp", 2, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.Sweep(c); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitRunning(c, lc, "default", "ncdelapp", 2, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	var victim *corev1.Node
	for _, n := range nodesOf(t, "ncdelapp", "default") {
		victim = n
		break
	}
	instance := instanceOf(victim)
	st, err := harness.Store(lc)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := harness.PoolRecords(c, st, "ncdel")
	if err != nil {
		t.Fatal(err)
	}
	name := ""
	for _, r := range recs {
		if r.InstanceID == instance {
			name = r.Name
		}
	}
	if name == "" {
		t.Fatalf("no record for instance %s in %v", instance, recs)
	}
	// sweeping polls cond, running a sweep a second (the schedule,
	// compressed).
	sweeping := func(what string, timeout time.Duration, cond func() (bool, string, error)) {
		t.Helper()
		var last time.Time
		if err := harness.Poll(c, timeout, what, func() (bool, string, error) {
			if time.Since(last) > time.Second {
				last = time.Now()
				if err := h.Sweep(c); err != nil {
					return false, "", err
				}
			}
			return cond()
		}); err != nil {
			t.Fatal(err)
		}
	}
	var first types.UID
	sweeping("the NodeClaim Ready", 2*time.Minute, func() (bool, string, error) {
		nc, err := getNodeClaim(c, name)
		if err != nil || nc == nil {
			return false, "no object", err
		}
		first = nc.UID
		ready := nc.Condition(nodeclaim.ConditionReady)
		node, err := lc.Kube.CoreV1().Nodes().Get(c, victim.Name, metav1.GetOptions{})
		if err != nil {
			return false, "no node", err
		}
		// The template's annotation is on the NodeClaim and on the Node.
		ok := ready != nil && ready.Status == metav1.ConditionTrue && nc.Status.NodeName == victim.Name && nc.HasFinalizer() &&
			len(nc.OwnerReferences) == 1 && nc.OwnerReferences[0].Name == "ncdel" && nc.Labels[apis.LabelNodePool] == "ncdel" &&
			nc.Annotations["example.com/team"] == "ncdel" && node.Annotations["example.com/team"] == "ncdel"
		return ok, fmt.Sprintf("ready %+v node %q owners %v annotations %v, node's %v", ready, nc.Status.NodeName, nc.OwnerReferences, nc.Annotations, node.Annotations), nil
	})
	// The NodePool's status: `kubectl get nodepools` shows NODES and READY.
	if err := harness.Poll(c, time.Minute, "the NodePool's status", func() (bool, string, error) {
		raw, err := lc.Kube.Discovery().RESTClient().Get().AbsPath("/apis/karpenter.sh/v1/nodepools/ncdel").DoRaw(c)
		if err != nil {
			return false, "", err
		}
		var np apis.NodePool
		if err := json.Unmarshal(raw, &np); err != nil {
			return false, "", err
		}
		ready := ""
		for _, cd := range np.Status.Conditions {
			if cd.Type == "Ready" {
				ready = string(cd.Status)
			}
		}
		return np.Status.Nodes != nil && *np.Status.Nodes >= 1 && ready == "True", fmt.Sprintf("nodes %v ready %q", np.Status.Nodes, ready), nil
	}); err != nil {
		t.Fatal(err)
	}
	// Lost without a deletion (its finalizer off first): made again.
	rc := lc.Kube.Discovery().RESTClient()
	if err := rc.Patch(types.MergePatchType).AbsPath(nodeClaimsPath + name).Body([]byte(`{"metadata":{"finalizers":null}}`)).Do(c).Error(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Delete().AbsPath(nodeClaimsPath + name).Do(c).Error(); err != nil {
		t.Fatal(err)
	}
	sweeping("the lost NodeClaim made again", time.Minute, func() (bool, string, error) {
		nc, err := getNodeClaim(c, name)
		if err != nil || nc == nil {
			return false, "no object", err
		}
		return nc.UID != first && nc.DeletionTimestamp == nil && nc.HasFinalizer(), fmt.Sprintf("uid %s", nc.UID), nil
	})
	if _, err := st.GetNodeClaim(c, name); err != nil {
		t.Fatalf("the record after its object was lost: %v", err)
	}

	// kubectl delete nodeclaim.
	if err := rc.Delete().AbsPath(nodeClaimsPath + name).Do(c).Error(); err != nil {
		t.Fatal(err)
	}
	sweeping("the deleted NodeClaim's node drained, its instance terminated, the object gone", 3*time.Minute, func() (bool, string, error) {
		_, err := lc.Kube.CoreV1().Nodes().Get(c, victim.Name, metav1.GetOptions{})
		nodeGone := apierrors.IsNotFound(err)
		running := slices.Contains(poolInstances(t, h, "ncdel"), instance)
		nc, err := getNodeClaim(c, name)
		if err != nil {
			return false, "", err
		}
		return nodeGone && !running && nc == nil, fmt.Sprintf("node gone %v, instance running %v, object %v", nodeGone, running, nc != nil), nil
	})
	if err := harness.WaitRunning(c, lc, "default", "ncdelapp", 2, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
}
