package scheduling

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/requirements"
)

// group is a set of pending pods with the same scheduling signature (requests,
// node selection, tolerations, topology, host ports, the labels selectors
// look at, namespace): they are interchangeable, so they are placed in bulk.
type group struct {
	pods        []*corev1.Pod // sorted by namespace/name
	rep         *corev1.Pod
	ns          string
	labels      map[string]string
	req         vec
	unknown     []corev1.ResourceName
	tolerations []corev1.Toleration
	hostPorts   []hostPort

	required      []requirements.Requirements // alternatives (terms), each with the nodeSelector
	preferredNode []weighted                  // heaviest first
	altIdx        int
	prefNodeIdx   int

	spreads  []spread
	affinity []term
	anti     []term
	owners   []int // owner counters of its required anti-affinity terms

	// volumes are the alternatives its volumes' topology allows (nil: no
	// restriction), ANDed with its node selection; volIdx is the one tried
	// now. volumeFrom names where they come from; volumeErr says why its
	// volumes make it unschedulable.
	volumes    []requirements.Requirements
	volIdx     int
	volumeFrom string
	volumeErr  string

	preferNoScheduleOK bool
	// nodeAffinity is the pod's nodeSelector and required node affinity as
	// component-helpers matches them against a Node (nil: it has neither).
	nodeAffinity *nodeaffinity.RequiredNodeAffinity

	// Set by prepare for each placement attempt.
	cur      *reqSet
	topoKeys []string
	eligible func(sp *spread) []string
	unit     float64 // lowest price per pod on a fresh node
	covers   map[coverKey]*coverTable

	tolerated map[*pool]bool
	matches   []int // counters whose selector matches the group's pods
	rank      int
	err       error
	relaxed   []string
	// oversized: no node can ever take a pod of the group (it asks for more
	// than any type offers), so it is not placed at all; tooLarge is the
	// reason when the request is too large even to count.
	oversized bool
	tooLarge  string
}

type weighted struct {
	weight int32
	reqs   requirements.Requirements
}

// spread is a topology spread constraint of a group.
type spread struct {
	key           string
	maxSkew       int
	minDomains    int
	counter       int
	selfMatch     bool
	anyway        bool // ScheduleAnyway: required until relaxed
	honorAffinity bool
	honorTaints   bool
	dropped       bool
}

// term is a pod affinity or anti-affinity term of a group.
type term struct {
	key       string
	counter   int
	selfMatch bool
	preferred bool
	weight    int32
	dropped   bool
}

// hopeless says whether no node can ever take a pod of g: its constraints
// are invalid, its volumes cannot be resolved, or it asks for more than any
// node has.
func (g *group) hopeless() bool { return g.err != nil || g.volumeErr != "" || g.oversized }

// nodeReqs is the node requirements the group must satisfy now.
func (g *group) nodeReqs() requirements.Requirements {
	r := g.required[g.altIdx]
	if g.volIdx < len(g.volumes) {
		r = r.Intersect(g.volumes[g.volIdx])
	}
	if g.prefNodeIdx < len(g.preferredNode) {
		r = r.Intersect(g.preferredNode[g.prefNodeIdx].reqs)
	}
	return r
}

// perNode is how many pods of g one node may hold by g's own constraints:
// maxSkew of a hostname spread over itself, one with a hostname
// anti-affinity to itself or host ports; else unlimited.
func (g *group) perNode() int {
	n := 1 << 30
	for _, sp := range g.spreads {
		if !sp.dropped && sp.selfMatch && sp.key == apis.LabelHostname {
			n = min(n, sp.maxSkew)
		}
	}
	for _, t := range g.anti {
		if !t.dropped && t.selfMatch && t.key == apis.LabelHostname {
			n = min(n, 1)
		}
	}
	if len(g.hostPorts) > 0 {
		n = min(n, 1)
	}
	return n
}

// spreadsBeyondHostname says whether g has an active spread on a key other
// than the hostname.
func (g *group) spreadsBeyondHostname() bool {
	for _, sp := range g.spreads {
		if !sp.dropped && sp.key != apis.LabelHostname {
			return true
		}
	}
	return false
}

// relax drops one preference in Karpenter's order and says what it dropped;
// false when nothing is left to relax.
func (g *group) relax() bool {
	step := g.relaxStep()
	if step == "" {
		return false
	}
	g.relaxed = append(g.relaxed, step)
	return true
}

func (g *group) relaxStep() string {
	if g.altIdx+1 < len(g.required) {
		g.altIdx++
		return fmt.Sprintf("required node affinity term %d", g.altIdx-1)
	}
	for _, terms := range []struct {
		list []term
		name string
	}{{g.affinity, "preferred pod affinity"}, {g.anti, "preferred pod anti-affinity"}} {
		for i := range terms.list {
			if t := &terms.list[i]; t.preferred && !t.dropped {
				t.dropped = true
				return terms.name + " on " + t.key
			}
		}
	}
	if g.prefNodeIdx < len(g.preferredNode) {
		g.prefNodeIdx++
		return "preferred node affinity"
	}
	for i := range g.spreads {
		if sp := &g.spreads[i]; sp.anyway && !sp.dropped {
			sp.dropped = true
			return "ScheduleAnyway topology spread on " + sp.key
		}
	}
	if !g.preferNoScheduleOK {
		g.preferNoScheduleOK, g.tolerated = true, nil
		return "PreferNoSchedule taints"
	}
	return ""
}

// selectorKeys collects every label key a selector in the input looks at, so
// that pod labels nobody selects on don't split groups.
func selectorKeys(pods []*corev1.Pod, nodes []*Node) map[string]bool {
	keys := map[string]bool{}
	for _, p := range pods {
		visitSelectorKeys(p, keys)
	}
	for _, n := range nodes {
		if n == nil {
			continue
		}
		if n.Bound != nil {
			for _, k := range n.Bound.keys {
				keys[k] = true
			}
		}
		for _, p := range unsummarised(n) {
			visitSelectorKeys(p, keys)
		}
	}
	return keys
}

// visitSelectorKeys adds to keys the label keys the selectors of p's
// spreads and pod (anti-)affinity terms look at.
func visitSelectorKeys(p *corev1.Pod, keys map[string]bool) {
	add := func(sel *metav1.LabelSelector, extra ...[]string) {
		for _, list := range extra {
			for _, k := range list {
				keys[k] = true
			}
		}
		if sel == nil {
			return
		}
		for k := range sel.MatchLabels {
			keys[k] = true
		}
		for _, e := range sel.MatchExpressions {
			keys[e.Key] = true
		}
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		add(c.LabelSelector, c.MatchLabelKeys)
	}
	a := p.Spec.Affinity
	if a == nil {
		return
	}
	for _, t := range affinityTerms(p) {
		add(t.LabelSelector, t.MatchLabelKeys, t.MismatchLabelKeys)
	}
}

// affinityTerms lists every pod (anti-)affinity term of a pod, required and
// preferred.
func affinityTerms(p *corev1.Pod) []corev1.PodAffinityTerm {
	a := p.Spec.Affinity
	if a == nil {
		return nil
	}
	var out []corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		out = append(out, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			out = append(out, w.PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		out = append(out, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			out = append(out, w.PodAffinityTerm)
		}
	}
	return out
}

// signature is the grouping key of a pod.
func (s *solver) signature(p *corev1.Pod, req vec, keys map[string]bool) string {
	var b bytes.Buffer
	b.WriteString(p.Namespace)
	b.WriteByte(0)
	lk := make([]string, 0, len(p.Labels))
	for k := range p.Labels {
		if keys[k] {
			lk = append(lk, k)
		}
	}
	sort.Strings(lk)
	for _, k := range lk {
		b.WriteString(k + "=" + p.Labels[k] + ",")
	}
	b.WriteByte(0)
	for _, x := range req {
		b.WriteString(strconv.FormatInt(x, 36) + ",")
	}
	b.WriteByte(0)
	nk := slices.Sorted(maps.Keys(p.Spec.NodeSelector))
	for _, k := range nk {
		b.WriteString(k + "=" + p.Spec.NodeSelector[k] + ",")
	}
	b.WriteByte(0)
	marshal := func(m interface{ Marshal() ([]byte, error) }) {
		data, _ := m.Marshal()
		b.Write(data)
		b.WriteByte(0)
	}
	if p.Spec.Affinity != nil {
		marshal(p.Spec.Affinity)
	}
	b.WriteByte(1)
	for i := range p.Spec.Tolerations {
		marshal(&p.Spec.Tolerations[i])
	}
	b.WriteByte(1)
	for i := range p.Spec.TopologySpreadConstraints {
		marshal(&p.Spec.TopologySpreadConstraints[i])
	}
	b.WriteByte(1)
	for _, hp := range podHostPorts(p) {
		fmt.Fprintf(&b, "%s/%s/%d,", hp.protocol, hp.ip, hp.port)
	}
	b.WriteByte(2)
	b.WriteString(s.u.volumesOf(p).signature())
	return b.String()
}

// buildGroups groups the pending pods and parses their constraints.
func (s *solver) buildGroups(pods []*corev1.Pod) {
	keys := selectorKeys(pods, s.in.Nodes)
	bySig := map[string]*group{}
	sorted := slices.Clone(pods)
	sort.Slice(sorted, func(i, j int) bool { return podKey(sorted[i]) < podKey(sorted[j]) })
	for _, p := range sorted {
		req, unknown := s.reg.podRequests(p)
		sig := s.signature(p, req, keys)
		if g, ok := bySig[sig]; ok {
			g.pods = append(g.pods, p)
			continue
		}
		g := &group{pods: []*corev1.Pod{p}, rep: p, ns: p.Namespace, labels: p.Labels, req: req, unknown: unknown,
			tolerations: p.Spec.Tolerations, hostPorts: podHostPorts(p)}
		vols := s.u.volumesOf(p)
		g.volumes, g.volumeFrom, g.volumeErr = vols.alts, vols.from, vols.err
		s.parseConstraints(g)
		bySig[sig] = g
		s.groups = append(s.groups, g)
	}
}

// parseConstraints reads a group's node selection and topology.
func (s *solver) parseConstraints(g *group) {
	p := g.rep
	alts, err := requirements.FromPod(p)
	if err != nil {
		g.err, g.required = err, []requirements.Requirements{nil}
		return
	}
	g.required = s.avoidDaemonPorts(g, alts)
	g.nodeAffinity = nodeSelection(p)
	ignore := s.in.PreferencePolicy == PreferencesIgnore
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && !ignore {
		for i, pt := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			r, err := requirements.FromNodeSelectorTerm(pt.Preference)
			if err != nil {
				g.err = fmt.Errorf("preferredDuringSchedulingIgnoredDuringExecution[%d]: %w", i, err)
				return
			}
			g.preferredNode = append(g.preferredNode, weighted{pt.Weight, r})
		}
		sort.SliceStable(g.preferredNode, func(i, j int) bool { return g.preferredNode[i].weight > g.preferredNode[j].weight })
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		if ignore && c.WhenUnsatisfiable == corev1.ScheduleAnyway {
			continue
		}
		if err := s.addSpread(g, c); err != nil {
			g.err = err
			return
		}
	}
	if err := s.addAffinity(g, p.Spec.Affinity, ignore); err != nil {
		g.err = err
	}
}

func (s *solver) addSpread(g *group, c corev1.TopologySpreadConstraint) error {
	sel, err := selectorWithKeys(c.LabelSelector, c.MatchLabelKeys, nil, g.labels)
	if err != nil {
		return fmt.Errorf("topologySpreadConstraints on %s: %w", c.TopologyKey, err)
	}
	sp := spread{key: apis.NormalizeLabel(c.TopologyKey), maxSkew: int(c.MaxSkew), minDomains: 1,
		anyway:        c.WhenUnsatisfiable == corev1.ScheduleAnyway,
		honorAffinity: c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor,
		honorTaints:   c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor}
	if c.MinDomains != nil {
		sp.minDomains = int(*c.MinDomains)
	}
	sp.counter = s.counterFor(sp.key, []string{g.ns}, false, sel)
	sp.selfMatch = sel.Matches(labels.Set(g.labels))
	g.spreads = append(g.spreads, sp)
	return nil
}

func (s *solver) addAffinity(g *group, a *corev1.Affinity, ignorePreferred bool) error {
	if a == nil {
		return nil
	}
	add := func(list *[]term, t corev1.PodAffinityTerm, preferred bool, weight int32, anti bool) error {
		sel, err := selectorWithKeys(t.LabelSelector, t.MatchLabelKeys, t.MismatchLabelKeys, g.labels)
		if err != nil {
			return fmt.Errorf("pod affinity term on %s: %w", t.TopologyKey, err)
		}
		all, ns := termNamespaces(t, g.ns)
		key := apis.NormalizeLabel(t.TopologyKey)
		tm := term{key: key, preferred: preferred, weight: weight,
			counter: s.counterFor(key, ns, all, sel), selfMatch: sel.Matches(labels.Set(g.labels)) && (all || slices.Contains(ns, g.ns))}
		*list = append(*list, tm)
		if anti && !preferred {
			g.owners = append(g.owners, s.ownerCounterFor(key, ns, all, sel))
		}
		return nil
	}
	type src struct {
		list      *[]term
		required  []corev1.PodAffinityTerm
		preferred []corev1.WeightedPodAffinityTerm
		anti      bool
	}
	var srcs []src
	if a.PodAffinity != nil {
		srcs = append(srcs, src{&g.affinity, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution, false})
	}
	if a.PodAntiAffinity != nil {
		srcs = append(srcs, src{&g.anti, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, true})
	}
	for _, sc := range srcs {
		for _, t := range sc.required {
			if err := add(sc.list, t, false, 0, sc.anti); err != nil {
				return err
			}
		}
		if ignorePreferred {
			continue
		}
		pref := slices.Clone(sc.preferred)
		sort.SliceStable(pref, func(i, j int) bool { return pref[i].Weight > pref[j].Weight })
		for _, w := range pref {
			if err := add(sc.list, w.PodAffinityTerm, true, w.Weight, sc.anti); err != nil {
				return err
			}
		}
	}
	return nil
}

// termNamespaces is the namespaces an affinity term selects pods in: its
// list, else the pod's own; a namespaceSelector (which needs Namespace
// objects the solve doesn't have) selects all namespaces.
func termNamespaces(t corev1.PodAffinityTerm, own string) (all bool, ns []string) {
	if t.NamespaceSelector != nil {
		return true, nil
	}
	if len(t.Namespaces) > 0 {
		ns = slices.Clone(t.Namespaces)
		sort.Strings(ns)
		return false, slices.Compact(ns)
	}
	return false, []string{own}
}

// selectorWithKeys converts a label selector and adds matchLabelKeys (key In
// [the pod's value]) and mismatchLabelKeys (key NotIn [value]).
func selectorWithKeys(ls *metav1.LabelSelector, match, mismatch []string, own map[string]string) (labels.Selector, error) {
	if ls == nil {
		return labels.Nothing(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, err
	}
	for _, list := range []struct {
		keys []string
		op   selection.Operator
	}{{match, selection.In}, {mismatch, selection.NotIn}} {
		for _, k := range list.keys {
			v, ok := own[k]
			if !ok {
				continue
			}
			r, err := labels.NewRequirement(k, list.op, []string{v})
			if err != nil {
				return nil, err
			}
			sel = sel.Add(*r)
		}
	}
	return sel, nil
}

// podKey is "namespace/name".
func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func podKeys(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = podKey(p)
	}
	return out
}
