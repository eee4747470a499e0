package kubeaccess

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/kube"
	"github.com/nodewright/nodewright/shared/refdata"
)

var (
	nodePoolsGVR   = schema.GroupVersionResource{Group: apis.KarpenterGroup, Version: apis.Version, Resource: "nodepools"}
	nodeClassesGVR = schema.GroupVersionResource{Group: apis.AWSGroup, Version: apis.Version, Resource: "ec2nodeclasses"}
)

// karpenterObjects returns the NodePool and EC2NodeClass documents of a file.
func karpenterObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		m := map[string]any{}
		if err := yaml.Unmarshal(doc, &m); err != nil || len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == apis.NodePoolKind || u.GetKind() == apis.EC2NodeClassKind {
			out = append(out, u)
		}
	}
	return out
}

// replaceKarpenterObjects deletes every NodePool and EC2NodeClass and creates objs.
func replaceKarpenterObjects(t *testing.T, dyn dynamic.Interface, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	for _, gvr := range []schema.GroupVersionResource{nodePoolsGVR, nodeClassesGVR} {
		if err := dyn.Resource(gvr).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "no "+gvr.Resource, func() (bool, error) {
			l, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
			return err == nil && len(l.Items) == 0, err
		})
	}
	for _, o := range objs {
		gvr := nodePoolsGVR
		if o.GetKind() == apis.EC2NodeClassKind {
			gvr = nodeClassesGVR
		}
		if _, err := dyn.Resource(gvr).Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// TestExamplesThroughCRDsAndCache: every example file's NodePools and
// EC2NodeClasses, created as objects under Nodewright's CRDs, come back
// through the cache exactly as the loader reads the file.
func TestExamplesThroughCRDsAndCache(t *testing.T) {
	dir, err := refdata.Examples()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	dyn, err := dynamic.NewForConfig(cloud.REST)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kube.New(cloud.REST)
	if err != nil {
		t.Fatal(err)
	}
	cache := kube.NewCache(kc, kube.CacheOptions{})
	checked := 0
	for _, f := range files {
		objs := karpenterObjects(t, f)
		if len(objs) == 0 {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			want, err := apis.LoadFiles(f)
			if err != nil {
				t.Fatal(err)
			}
			replaceKarpenterObjects(t, dyn, objs)
			v, err := cache.Sync(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !v.KarpenterCRDs || v.Invalid != nil {
				t.Fatalf("CRDs %v, invalid: %v", v.KarpenterCRDs, v.Invalid)
			}
			if len(v.NodePools) != len(want.NodePools) || len(v.NodeClasses) != len(want.NodeClasses) {
				t.Fatalf("read %d NodePools and %d EC2NodeClasses, the file has %d and %d", len(v.NodePools), len(v.NodeClasses), len(want.NodePools), len(want.NodeClasses))
			}
			for i, np := range want.NodePools {
				sameJSON(t, "NodePool "+np.Name, np.Spec, v.NodePools[i].Spec)
			}
			for i, nc := range want.NodeClasses {
				sameJSON(t, "EC2NodeClass "+nc.Name, nc.Spec, v.NodeClasses[i].Spec)
			}
			checked += len(objs)
		})
	}
	if checked < 5 {
		t.Fatalf("only %d objects checked", checked)
	}

	// An invalid NodePool is reported by name and field path; the valid
	// EC2NodeClass beside it is still read.
	objs := karpenterObjects(t, filepath.Join(dir, "getting-started.yaml"))
	for _, o := range objs {
		if o.GetKind() == apis.NodePoolKind {
			if err := unstructured.SetNestedField(o.Object, int64(0), "spec", "weight"); err != nil {
				t.Fatal(err)
			}
			o.SetName("bad")
		}
	}
	replaceKarpenterObjects(t, dyn, objs)
	v, err := cache.Sync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v.Invalid == nil || !strings.Contains(v.Invalid.Error(), "cluster: NodePool bad: spec.weight") || len(v.NodePools) != 0 || len(v.NodeClasses) != 1 {
		t.Fatalf("invalid %v; %d NodePools, %d EC2NodeClasses", v.Invalid, len(v.NodePools), len(v.NodeClasses))
	}
}

func sameJSON(t *testing.T, what string, want, got any) {
	t.Helper()
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(got)
	if !bytes.Equal(a, b) {
		t.Errorf("%s read back differs:\n got %s\nwant %s", what, b, a)
	}
}

// TestNodeOverlayThroughCRDAndCache: a NodeOverlay applied under
// Nodewright's CRD (karpenter.sh/v1alpha1) comes back through the cache as
// the loader reads it.
func TestNodeOverlayThroughCRDAndCache(t *testing.T) {
	dyn, err := dynamic.NewForConfig(cloud.REST)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kube.New(cloud.REST)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: apis.KarpenterGroup, Version: "v1alpha1", Resource: "nodeoverlays"}
	doc := "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: savings-plan}\n" +
		"spec: {priceAdjustment: '-10%', weight: 10, requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]}\n"
	want, err := apis.Parse([]byte(doc), "overlay.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := dyn.Resource(gvr).Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dyn.Resource(gvr).Delete(context.Background(), "savings-plan", metav1.DeleteOptions{}) })
	v, err := kube.NewCache(kc, kube.CacheOptions{}).Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// (another test may leave an invalid NodePool: only overlays count here)
	if len(v.NodeOverlays) != 1 || v.Invalid != nil && strings.Contains(v.Invalid.Error(), "NodeOverlay") {
		t.Fatalf("read %d NodeOverlays, invalid: %v", len(v.NodeOverlays), v.Invalid)
	}
	sameJSON(t, "NodeOverlay savings-plan", want.NodeOverlays[0].Spec, v.NodeOverlays[0].Spec)
}
