package setup

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/drain"
	"github.com/nodewright/nodewright/shared/handover"
	"github.com/nodewright/nodewright/shared/kube"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/trigger"
)

// cacheSource reads the cluster through the warm cache; now dates
// Karpenter's lease.
type cacheSource struct {
	c   *kube.Cache
	now func() time.Time
}

func (s cacheSource) View(ctx context.Context) (*provision.View, error) {
	v, err := s.c.Sync(ctx)
	if err != nil {
		return nil, err
	}
	out := &provision.View{Pods: v.Pods, Nodes: v.Nodes, DaemonSets: v.DaemonSets, PDBs: v.PDBs, NodePools: v.NodePools, NodeClasses: v.NodeClasses, NodeOverlays: v.NodeOverlays,
		Volumes:   &scheduling.Volumes{Claims: v.PersistentVolumeClaims, Volumes: v.PersistentVolumes, StorageClasses: v.StorageClasses},
		Karpenter: handover.Running(v.KarpenterLeases, s.now()), KarpenterUnknown: v.KarpenterUnknown}
	if v.Invalid != nil {
		out.Warnings = append(out.Warnings, fmt.Sprintf("invalid Karpenter objects in the cluster (ignored): %v", v.Invalid))
	}
	return out, nil
}

// Pods brings only the pods up to date (provision.PodSource).
func (s cacheSource) Pods(ctx context.Context) ([]*corev1.Pod, error) {
	return s.c.SyncPods(ctx)
}

// Expect passes the trigger's pods to the cache (provision.Expecter).
func (s cacheSource) Expect(pods []trigger.PodRef) {
	hints := make([]kube.PodHint, 0, len(pods))
	for _, p := range pods {
		hints = append(hints, kube.PodHint{Namespace: p.Namespace, Name: p.Name, ResourceVersion: p.ResourceVersion})
	}
	s.c.Expect(hints)
}

// nodeWriter writes Nodes through the lean client.
type nodeWriter struct{ c *kube.Client }

func (w nodeWriter) Relabel(ctx context.Context, name string, labels map[string]*string) error {
	return w.c.Label(ctx, name, labels)
}

func (w nodeWriter) MarkNode(ctx context.Context, name string, labels, annotations map[string]string) error {
	if _, err := w.c.AddFinalizer(ctx, name, apis.FinalizerTermination); err != nil {
		return err
	}
	if len(annotations) > 0 {
		if err := w.c.Annotate(ctx, name, annotations); err != nil {
			return err
		}
	}
	if len(labels) == 0 {
		return nil
	}
	set := map[string]*string{}
	for k, v := range labels {
		set[k] = &v
	}
	return w.c.Label(ctx, name, set)
}

func (w nodeWriter) RemoveFinalizer(ctx context.Context, name string) error {
	_, err := w.c.RemoveFinalizer(ctx, name, apis.FinalizerTermination)
	return err
}

func (w nodeWriter) Taint(ctx context.Context, name string, taint corev1.Taint, cordon bool) error {
	if _, err := w.c.Taint(ctx, name, taint); err != nil {
		return err
	}
	if cordon {
		return w.c.Cordon(ctx, name, true)
	}
	return nil
}

func (w nodeWriter) Untaint(ctx context.Context, name, key string) error {
	_, err := w.c.Untaint(ctx, name, key, "")
	return err
}

func (w nodeWriter) DeleteNode(ctx context.Context, name string) error {
	return w.c.DeleteNode(ctx, name)
}

// events records events through the aggregating, rate-limited recorder.
type events struct{ r *kube.Recorder }

func (e events) Event(ctx context.Context, ref provision.Ref, eventType, reason, message string) {
	apiVersion := ref.APIVersion
	if apiVersion == "" {
		apiVersion = "v1"
	}
	_ = e.r.Event(ctx, kube.ObjectRef{APIVersion: apiVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, UID: types.UID(ref.UID)},
		eventType, reason, message)
}

// drainer drains through the Eviction API.
type drainer struct {
	c   *kube.Client
	now func() time.Time
}

func (d drainer) Drain(ctx context.Context, node string, opts provision.DrainOptions) (provision.DrainResult, error) {
	res, err := drain.Drain(ctx, d.c, node, drain.Options{
		Deadline: opts.Deadline, IgnoreDoNotDisrupt: opts.Force, MaxGracePeriod: opts.MaxGracePeriod, Now: d.now,
	})
	if err != nil {
		return provision.DrainResult{}, err
	}
	return drainResult(res), nil
}

// drainResult is the terminator's account of a drain pass: pods as
// namespace/name, and when the next pass must come (DeleteBy).
func drainResult(res *drain.Result) provision.DrainResult {
	names := func(os []drain.Outcome) []string {
		out := make([]string, 0, len(os))
		for _, o := range os {
			out = append(out, o.Pod.String())
		}
		return out
	}
	out := provision.DrainResult{
		Done: res.Done, Evicted: names(res.Evicted), Deleted: names(res.Deleted), Blocked: names(res.Blocked),
		Remaining: append(names(res.Blocked), names(res.Terminating)...), DeleteBy: res.DeleteBy,
		UIDs: map[string]string{}, Why: map[string]string{},
	}
	for _, l := range [][]drain.Outcome{res.Evicted, res.Deleted, res.Blocked} {
		for _, o := range l {
			if o.UID != "" {
				out.UIDs[o.Pod.String()] = string(o.UID)
			}
		}
	}
	for _, o := range res.Blocked {
		switch o.Reason {
		case drain.ReasonPDB:
			out.Why[o.Pod.String()] = "evicting it violates a PodDisruptionBudget"
		case drain.ReasonError:
			out.Why[o.Pod.String()] = fmt.Sprintf("eviction failed: %v", o.Err)
		}
	}
	return out
}
