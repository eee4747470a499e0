package nodeclaim

import (
	"slices"
	"sort"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
)

// Plan is what brings the cluster's NodeClaims in step with the records.
type Plan struct {
	// Create are records' NodeClaims missing from the cluster.
	Create []*NodeClaim
	// Update are NodeClaims whose metadata or status differ.
	Update []Update
	// Delete are Nodewright's NodeClaims whose record is gone; Release
	// those of them being deleted, whose finalizer is to come off.
	Delete, Release []string
}

// Update is one NodeClaim's change. Meta is nil when the labels,
// finalizer and owner reference are in step; Status nil when the status
// is.
type Update struct {
	Name   string
	Meta   *metav1.ObjectMeta
	Status *Status
}

// Empty reports whether the plan changes nothing.
func (p Plan) Empty() bool {
	return len(p.Create)+len(p.Update)+len(p.Delete)+len(p.Release) == 0
}

// PlanSync compares the records' NodeClaims (desired, from Desired) with
// the cluster's (current, listed before the records were read, so that an
// object without a record really has none). The spec is never changed (it
// is immutable, as in Karpenter); a condition whose status and reason are
// unchanged keeps its transition time. Objects that are not Nodewright's
// (Karpenter's, during a migration) are left alone unless a record has
// their name (an adopted node's): then they become Nodewright's. Pure;
// sorted by name.
func PlanSync(desired, current []*NodeClaim) Plan {
	var p Plan
	cur := map[string]*NodeClaim{}
	for _, c := range current {
		cur[c.Name] = c
	}
	want := map[string]bool{}
	for _, d := range desired {
		want[d.Name] = true
		c := cur[d.Name]
		if c == nil {
			p.Create = append(p.Create, d)
			continue
		}
		u := Update{Name: d.Name}
		switch {
		case c.DeletionTimestamp == nil:
			u.Meta = metaChange(d, c)
		case !c.Managed():
			// An adopted node's object Karpenter was deleting: labelled
			// Nodewright's, its deletion is carried out (Deleted) and its
			// finalizer released.
			u.Meta = &metav1.ObjectMeta{Labels: map[string]string{LabelManagedBy: d.Labels[LabelManagedBy]}}
		}
		st := d.Status
		st.Conditions = apis.KeepTransitionTimes(st.Conditions, c.Status.Conditions)
		if !apiequality.Semantic.DeepEqual(st, c.Status) {
			u.Status = &st
		}
		if u.Meta != nil || u.Status != nil {
			p.Update = append(p.Update, u)
		}
	}
	for _, c := range current {
		if want[c.Name] || !c.Managed() {
			continue
		}
		switch {
		case c.DeletionTimestamp == nil:
			p.Delete = append(p.Delete, c.Name)
		case c.HasFinalizer():
			p.Release = append(p.Release, c.Name)
		}
	}
	sort.Slice(p.Create, func(i, j int) bool { return p.Create[i].Name < p.Create[j].Name })
	sort.Slice(p.Update, func(i, j int) bool { return p.Update[i].Name < p.Update[j].Name })
	sort.Strings(p.Delete)
	sort.Strings(p.Release)
	return p
}

// metaChange is the metadata to write (the desired labels and annotations
// over the current ones, the finalizer added, the owner reference) or nil.
func metaChange(d, c *NodeClaim) *metav1.ObjectMeta {
	changed := false
	labels := map[string]string{}
	for k, v := range d.Labels {
		if c.Labels[k] != v {
			labels[k], changed = v, true
		}
	}
	var annotations map[string]string
	for k, v := range d.Annotations {
		if c.Annotations[k] != v {
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations[k], changed = v, true
		}
	}
	m := &metav1.ObjectMeta{Labels: labels, Annotations: annotations}
	if !c.HasFinalizer() {
		m.Finalizers, changed = append(slices.Clone(c.Finalizers), apis.FinalizerTermination), true
	}
	if len(d.OwnerReferences) > 0 && !apiequality.Semantic.DeepEqual(d.OwnerReferences, c.OwnerReferences) {
		m.OwnerReferences, changed = d.OwnerReferences, true
	}
	if !changed {
		return nil
	}
	return m
}

// Deleted names Nodewright's NodeClaims being deleted (`kubectl delete
// nodeclaim`): the nodes of their records are to be terminated. Pure;
// sorted.
func Deleted(current []*NodeClaim) []string {
	var out []string
	for _, c := range current {
		if c.DeletionTimestamp != nil && c.Managed() {
			out = append(out, c.Name)
		}
	}
	sort.Strings(out)
	return out
}
