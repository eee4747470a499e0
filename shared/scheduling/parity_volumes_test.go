package scheduling_test

// Scenarios mirroring the volume topology cases of Karpenter's suites
// (v1.14.1): provisioning suite_test.go's "Volume Topology Requirements",
// scheduling suite_test.go's "VolumeUsage" and topology_test.go's volume
// case ("<suite>:<line>"). Karpenter's test zones test-zone-1..3 are
// us-east-1a..c here; its StorageClass of zones 2 and 3 is "zonal".

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// volumes adds volume objects to the input (and makes it read volumes).
func volumes(objs ...any) opt {
	return func(in *scheduling.Input) {
		if in.Volumes == nil {
			in.Volumes = &scheduling.Volumes{}
		}
		for _, o := range objs {
			switch o := o.(type) {
			case *corev1.PersistentVolumeClaim:
				in.Volumes.Claims = append(in.Volumes.Claims, o)
			case *corev1.PersistentVolume:
				in.Volumes.Volumes = append(in.Volumes.Volumes, o)
			case *storagev1.StorageClass:
				in.Volumes.StorageClasses = append(in.Volumes.StorageClasses, o)
			default:
				panic("volumes: not a volume object")
			}
		}
	}
}

// hostTerm is a node affinity term on a hostname no node has.
func hostTerm(host string) []corev1.NodeSelectorRequirement {
	return []corev1.NodeSelectorRequirement{nsr(hostKey, opIn, host)}
}

func volumeParity() []scenario {
	zonal := func() *storagev1.StorageClass {
		return st.Class(st.ClassOptions{Name: "zonal", Zones: []string{zoneB, zoneC}})
	}
	claim := func(name string, class *string, volume string) *corev1.PersistentVolumeClaim {
		return st.Claim(st.ClaimOptions{Name: name, Class: class, Volume: volume})
	}
	pv := func(name string, zones ...string) *corev1.PersistentVolume {
		return st.Volume(st.VolumeOptions{Name: name, Zones: zones})
	}
	// eph is a pod with one ephemeral volume of class; its claim is
	// <pod>-eph-0.
	eph := func(name string, class *string, o po) *corev1.Pod {
		o.Name, o.EphemeralClasses = name, []*string{class}
		return pod(o)
	}
	zoneAC := po{NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneA, zoneC))}
	zoneOnlyA := po{NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneA))}
	withClaims := func(o po, names ...string) po { o.Name, o.Claims = "p", names; return o }
	localPV := func(source string) *corev1.PersistentVolume {
		return st.Volume(st.VolumeOptions{Name: "local", Source: source, Terms: [][]corev1.NodeSelectorRequirement{hostTerm("gone-host")}})
	}
	antiZone := func(name string, claims ...string) *corev1.Pod {
		return pod(po{Name: name, Labels: labels("app", "multi"), Claims: claims,
			AntiAffinity: []corev1.PodAffinityTerm{{LabelSelector: &metav1.LabelSelector{MatchLabels: labels("app", "multi")}, TopologyKey: zoneKey}}})
	}
	twoZonePV := func(name string) *corev1.PersistentVolume {
		return st.Volume(st.VolumeOptions{Name: name, Terms: [][]corev1.NodeSelectorRequirement{{nsr(zoneKey, opIn, zoneA)}, {nsr(zoneKey, opIn, zoneB)}}})
	}
	inZones := func(pod string, zs ...string) check {
		return func(t *testing.T, p *plan) {
			nc, ok := p.claim(t, pod)
			if !ok {
				return
			}
			for _, z := range nc.Zones {
				if !slices.Contains(zs, z) {
					t.Errorf("%s: NodeClaim may launch in %s, want only %v", pod, z, zs)
				}
			}
		}
	}
	return []scenario{
		// Karpenter provisioning:1995: "should not schedule if invalid pvc"
		// Karpenter provisioning:2066: "should schedule valid pods when a pod with an invalid pvc is encountered (pvc)"
		{mirrors: []string{"provisioning:1995", "provisioning:2066"}, name: "K: a pod whose claim does not exist is unschedulable; others are not held up",
			in:   input(volumes(), pods(pod(po{Name: "invalid", Claims: []string{"invalid"}}), pod(po{Name: "valid"}))),
			want: []check{unschedulable("invalid", "PersistentVolumeClaim default/invalid", "does not exist"), fromPool("valid", "default")}},
		// Karpenter provisioning:2004: "should schedule with an empty storage class if the pvc is bound"
		{mirrors: []string{"provisioning:2004"}, name: "K: a bound claim with an empty storage class schedules",
			in:   input(volumes(claim("data", st.Str(""), "test-volume"), st.Volume(st.VolumeOptions{Name: "test-volume"})), pods(pod(po{Name: "p", Claims: []string{"data"}}))),
			want: []check{allScheduled(), claims(1)}},
		// Karpenter provisioning:2024: "should not schedule with an empty storage class if the pvc is not bound"
		{mirrors: []string{"provisioning:2024"}, name: "K: an unbound claim with an empty storage class is unschedulable",
			in:   input(volumes(claim("data", st.Str(""), "")), pods(pod(po{Name: "p", Claims: []string{"data"}}))),
			want: []check{claims(0), unschedulable("p", "default/data", "not bound", "no StorageClass")}},
		// Karpenter provisioning:2034: "should schedule with a missing storage class if the pvc is bound"
		{mirrors: []string{"provisioning:2034"}, name: "K: a bound claim of a missing storage class schedules",
			in: input(volumes(claim("data", st.Str("missing-storage-class"), "test-volume"), st.Volume(st.VolumeOptions{Name: "test-volume", Class: "missing-storage-class"})),
				pods(pod(po{Name: "p", Claims: []string{"data"}}))),
			want: []check{allScheduled(), claims(1)}},
		// Karpenter provisioning:2054: "should not schedule with a missing storage class if the pvc is not bound"
		// Karpenter provisioning:2077: "should schedule valid pods when a pod with an invalid pvc is encountered (storage class)"
		{mirrors: []string{"provisioning:2054", "provisioning:2077"}, name: "K: an unbound claim of a missing storage class is unschedulable; others are not held up",
			in:   input(volumes(claim("data", st.Str("missing-storage-class"), "")), pods(pod(po{Name: "invalid", Claims: []string{"data"}}), pod(po{Name: "valid"}))),
			want: []check{unschedulable("invalid", "StorageClass missing-storage-class does not exist"), fromPool("valid", "default")}},
		// Karpenter provisioning:2090: "should schedule valid pods when a pod with an invalid pvc is encountered (volume name)"
		{mirrors: []string{"provisioning:2090"}, name: "K: a claim bound to a volume that does not exist is unschedulable; others are not held up",
			in:   input(volumes(claim("data", nil, "invalid-volume-name")), pods(pod(po{Name: "invalid", Claims: []string{"data"}}), pod(po{Name: "valid"}))),
			want: []check{unschedulable("invalid", "PersistentVolume invalid-volume-name", "does not exist"), fromPool("valid", "default")}},
		// Karpenter provisioning:2103: "should schedule to storage class zones if volume does not exist"
		{mirrors: []string{"provisioning:2103"}, name: "K: an unbound claim lands in a zone its StorageClass allows and the pod selects",
			in:   input(volumes(zonal(), claim("data", st.Str("zonal"), "")), pods(pod(withClaims(zoneAC, "data")))),
			want: []check{claimZones("p", zoneC)}},
		// Karpenter provisioning:2116: "should schedule to storage class zones if volume does not exist (ephemeral volume)"
		{mirrors: []string{"provisioning:2116"}, name: "K: an ephemeral volume's unbound claim lands in a zone its StorageClass allows",
			in:   input(volumes(zonal(), claim("p-eph-0", st.Str("zonal"), "")), pods(eph("p", st.Str("zonal"), zoneAC))),
			want: []check{claimZones("p", zoneC)}},
		// Karpenter provisioning:2138: "should not schedule if storage class zones are incompatible"
		{mirrors: []string{"provisioning:2138"}, name: "K: a StorageClass's zones outside the pod's zones make it unschedulable",
			in:   input(volumes(zonal(), claim("data", st.Str("zonal"), "")), pods(pod(withClaims(zoneOnlyA, "data")))),
			want: []check{claims(0), unschedulable("p", "excludes every node its volumes allow", "StorageClass zonal", zoneB)}},
		// Karpenter provisioning:2150: "should not schedule if storage class zones are incompatible (ephemeral volume)"
		{mirrors: []string{"provisioning:2150"}, name: "K: an ephemeral volume's StorageClass zones outside the pod's make it unschedulable",
			in:   input(volumes(zonal(), claim("p-eph-0", st.Str("zonal"), "")), pods(eph("p", st.Str("zonal"), zoneOnlyA))),
			want: []check{claims(0), unschedulable("p", "StorageClass zonal")}},
		// Karpenter provisioning:2171: "should schedule to volume zones if volume already bound"
		{mirrors: []string{"provisioning:2171"}, name: "K: a bound claim's volume zone decides the node's",
			in:   input(volumes(zonal(), pv("vol", zoneC), claim("data", st.Str("zonal"), "vol")), pods(pod(po{Name: "p", Claims: []string{"data"}}))),
			want: []check{claimZones("p", zoneC)}},
		// Karpenter provisioning:2182: "should schedule to volume zones if volume already bound (ephemeral volume)"
		{mirrors: []string{"provisioning:2182"}, name: "K: an ephemeral volume's bound claim decides the node's zone",
			in:   input(volumes(zonal(), pv("vol", zoneC), claim("p-eph-0", st.Str("zonal"), "vol")), pods(eph("p", st.Str("zonal"), po{}))),
			want: []check{claimZones("p", zoneC)}},
		// Karpenter provisioning:2241: "should ignore hostname affinity scheduling when using local path volumes" (when using local volumes)
		// Karpenter provisioning:2242: "should ignore hostname affinity scheduling when using local path volumes" (when using hostpath volumes)
		{mirrors: []string{"provisioning:2241", "provisioning:2242"}, name: "K: the hostname affinity of local and hostPath volumes is ignored",
			in: input(volumes(localPV("local"), claim("local-data", st.Str("local-path"), "local"),
				func() *corev1.PersistentVolume { v := localPV("hostPath"); v.Name = "hostpath"; return v }(), claim("host-data", st.Str("local-path"), "hostpath")),
				pods(pod(po{Name: "local", Claims: []string{"local-data"}}), pod(po{Name: "hostpath", Claims: []string{"host-data"}}))),
			want: []check{allScheduled(), fromPool("local", "default"), fromPool("hostpath", "default")}},
		// Karpenter provisioning:2287: "should ignore hostname affinity scheduling when using local path volumes (ephemeral volume)" (when using local volumes)
		// Karpenter provisioning:2288: "should ignore hostname affinity scheduling when using local path volumes (ephemeral volume)" (when using hostpath volumes)
		{mirrors: []string{"provisioning:2287", "provisioning:2288"}, name: "K: the hostname affinity of ephemeral local and hostPath volumes is ignored",
			in: input(volumes(localPV("local"), claim("local-eph-0", st.Str("local-path"), "local"),
				func() *corev1.PersistentVolume { v := localPV("hostPath"); v.Name = "hostpath"; return v }(), claim("hostpath-eph-0", st.Str("local-path"), "hostpath")),
				pods(eph("local", st.Str("local-path"), po{}), eph("hostpath", st.Str("local-path"), po{}))),
			want: []check{allScheduled(), claims(1)}},
		// Karpenter provisioning:2290: "should not ignore hostname affinity when using non-local path volumes"
		{mirrors: []string{"provisioning:2290"}, name: "K: the hostname affinity of a CSI volume is kept: no new node can take the pod",
			in: input(volumes(zonal(), st.Volume(st.VolumeOptions{Name: "csi", Terms: [][]corev1.NodeSelectorRequirement{hostTerm("gone-host")}}), claim("data", st.Str("zonal"), "csi")),
				pods(pod(po{Name: "p", Claims: []string{"data"}}))),
			want: []check{claims(0), unschedulable("p", "hostname cannot be chosen", "PersistentVolume csi")}},
		// Karpenter provisioning:2317: "should not schedule if volume zones are incompatible"
		{mirrors: []string{"provisioning:2317"}, name: "K: a bound volume's zone outside the pod's zones makes it unschedulable",
			in:   input(volumes(zonal(), pv("vol", zoneC), claim("data", st.Str("zonal"), "vol")), pods(pod(withClaims(zoneOnlyA, "data")))),
			want: []check{claims(0), unschedulable("p", "excludes every node its volumes allow", "PersistentVolume vol", zoneC)}},
		// Karpenter provisioning:2330: "should not schedule if volume zones are incompatible (ephemeral volume)"
		{mirrors: []string{"provisioning:2330"}, name: "K: an ephemeral volume's bound zone outside the pod's zones makes it unschedulable",
			in:   input(volumes(zonal(), pv("vol", zoneC), claim("p-eph-0", st.Str("zonal"), "vol")), pods(eph("p", st.Str("zonal"), zoneOnlyA))),
			want: []check{claims(0), unschedulable("p", "PersistentVolume vol")}},
		// Karpenter provisioning:2353: "should not relax an added volume topology zone node-selector away"
		{mirrors: []string{"provisioning:2353"}, name: "K: the volume's zone holds in every required term the pod relaxes through",
			in: input(volumes(zonal(), pv("vol", zoneC), claim("data", st.Str("zonal"), "vol")),
				pods(pod(po{Name: "p", Claims: []string{"data"}, NodeRequirements: nsrs(nsr("example.com/label", opIn, "unsupported")),
					NodeTerms: [][]corev1.NodeSelectorRequirement{{nsr(ctKey, opIn, onDemand)}}}))),
			want: []check{claimZones("p", zoneC), capacityType("p", onDemand)}},

		// Karpenter scheduling:2955: "should launch a single node if all pods use the same PVC"
		{mirrors: []string{"scheduling:2955"}, name: "K: a hundred pods of one bound claim share a node in its zone",
			in: input(volumes(st.Class(st.ClassOptions{Name: "my-storage-class", Zones: []string{zoneA}, Immediate: true}), pv("my-volume", zoneA),
				claim("my-claim", st.Str("my-storage-class"), "my-volume")), podList(podsN(100, po{Name: "p", Claims: []string{"my-claim"}}))),
			want: []check{claims(1), claimZones("p-0", zoneA)}},
		// Karpenter scheduling:3009: "should not fail for NFS volumes"
		{mirrors: []string{"scheduling:3009"}, name: "K: pods of an NFS volume (listed twice each) share a node in its zone",
			in: input(volumes(st.Volume(st.VolumeOptions{Name: "my-volume", Source: "nfs", Class: "nfs", Zones: []string{zoneA}}), claim("my-claim", st.Str(""), "my-volume")),
				podList(podsN(5, po{Name: "p", Claims: []string{"my-claim", "my-claim"}}))),
			want: []check{claims(1), claimZones("p-0", zoneA)}},
		// Karpenter scheduling:3047: "should schedule pods using a PV with multiple zones"
		{mirrors: []string{"scheduling:3047"}, name: "K: volumes of two zone terms let anti-affine pods take one zone each",
			in: input(volumes(twoZonePV("pv-0"), twoZonePV("pv-1"), claim("pvc-0", nil, "pv-0"), claim("pvc-1", nil, "pv-1")),
				pods(antiZone("pod-0", "pvc-0"), antiZone("pod-1", "pvc-1"))),
			want: []check{allScheduled(), inZones("pod-0", zoneA, zoneB), inZones("pod-1", zoneA, zoneB), podZoneCounts(labels("app", "multi"), 1, 1)}},
		// Karpenter scheduling:3115: "should preserve unconstrained PV alternatives after ignoring hostname affinity" (for local volumes)
		// Karpenter scheduling:3116: "should preserve unconstrained PV alternatives after ignoring hostname affinity" (for hostpath volumes)
		{mirrors: []string{"scheduling:3115", "scheduling:3116"}, name: "K: a local volume's hostname-only term leaves the pod free beside an impossible zone term",
			in: input(volumes(
				st.Volume(st.VolumeOptions{Name: "local", Source: "local", Terms: [][]corev1.NodeSelectorRequirement{hostTerm("existing-host"), {nsr(zoneKey, opIn, "invalid-zone")}}}),
				st.Volume(st.VolumeOptions{Name: "hostpath", Source: "hostPath", Terms: [][]corev1.NodeSelectorRequirement{hostTerm("existing-host"), {nsr(zoneKey, opIn, "invalid-zone")}}}),
				claim("local", nil, "local"), claim("hostpath", nil, "hostpath")),
				pods(pod(po{Name: "local", Claims: []string{"local"}}), pod(po{Name: "hostpath", Claims: []string{"hostpath"}}))),
			want: []check{allScheduled(), fromPool("local", "default"), fromPool("hostpath", "default")}},
		// Karpenter scheduling:3118: "should schedule pods using a StorageClass with multiple zones in AllowedTopologies"
		{mirrors: []string{"scheduling:3118"}, name: "K: a StorageClass of two zone terms lets anti-affine pods take one zone each",
			in: input(volumes(st.Class(st.ClassOptions{Name: "multi-zone-sc", Topologies: [][]corev1.TopologySelectorLabelRequirement{
				{{Key: zoneKey, Values: []string{zoneA}}}, {{Key: zoneKey, Values: []string{zoneB}}}}}),
				claim("pvc-0", st.Str("multi-zone-sc"), ""), claim("pvc-1", st.Str("multi-zone-sc"), "")),
				pods(antiZone("sc-pod-0", "pvc-0"), antiZone("sc-pod-1", "pvc-1"))),
			want: []check{allScheduled(), inZones("sc-pod-0", zoneA, zoneB), inZones("sc-pod-1", zoneA, zoneB), podZoneCounts(labels("app", "multi"), 1, 1)}},
		// Karpenter scheduling:3165: "should schedule pods when a valid multi-volume topology alternative remains after pruning disjoint branches"
		{mirrors: []string{"scheduling:3165"}, name: "K: two volumes' terms combine; the combination no type offers gives way to the one that is",
			in: input(volumes(
				st.Class(st.ClassOptions{Name: "a", Topologies: [][]corev1.TopologySelectorLabelRequirement{
					{{Key: categoryKey, Values: []string{"m"}}}, {{Key: categoryKey, Values: []string{"c"}}}}}),
				st.Class(st.ClassOptions{Name: "b", Topologies: [][]corev1.TopologySelectorLabelRequirement{
					{{Key: zoneKey, Values: []string{zoneA}}, {Key: categoryKey, Values: []string{"c"}}},
					{{Key: zoneKey, Values: []string{zoneB}}, {Key: categoryKey, Values: []string{"m"}}}}}),
				claim("pvc-a", st.Str("a"), ""), claim("pvc-b", st.Str("b"), "")),
				pods(pod(po{Name: "p", Claims: []string{"pvc-a", "pvc-b"}}))),
			want: []check{claimZones("p", zoneA), everyType("p", "category c", func(it *catalog.InstanceType) bool { return it.Category == "c" })}},
		// Karpenter scheduling:3629: "should not launch nodes for pod with storageClass that uses an unsupported topology key"
		// (Karpenter's AWS provider marks no key unsupported: it reads the EBS CSI driver's zone key as the zone, as Nodewright does.)
		{mirrors: []string{"scheduling:3629"}, name: "K: a StorageClass on the EBS CSI zone key means the zone; zones the cluster lacks launch nothing",
			in: input(volumes(
				st.Class(st.ClassOptions{Name: "ebs-foreign", Topologies: [][]corev1.TopologySelectorLabelRequirement{{{Key: scheduling.LabelEBSCSIZone, Values: []string{"us-west-2a", "us-west-2b"}}}}}),
				st.Class(st.ClassOptions{Name: "ebs", Topologies: [][]corev1.TopologySelectorLabelRequirement{{{Key: scheduling.LabelEBSCSIZone, Values: []string{zoneB}}}}}),
				claim("foreign", st.Str("ebs-foreign"), ""), claim("local", st.Str("ebs"), "")),
				pods(pod(po{Name: "foreign", Claims: []string{"foreign"}}), pod(po{Name: "local", Claims: []string{"local"}}))),
			want: []check{unschedulable("foreign", "us-west-2a"), claimZones("local", zoneB)}},
		// Karpenter scheduling:3662: "should not launch nodes for pod with unbound volume for volumeBindingMode immediate"
		{mirrors: []string{"scheduling:3662"}, name: "K: an unbound claim of an Immediate StorageClass waits for its volume",
			in:   input(volumes(st.Class(st.ClassOptions{Name: "immediate", Zones: []string{zoneA}, Immediate: true}), claim("data", st.Str("immediate"), "")), pods(pod(po{Name: "p", Claims: []string{"data"}}))),
			want: []check{claims(0), unschedulable("p", "binds Immediately")}},
		// Karpenter scheduling:3684: "should not launch nodes for pod with deleting persistentVolumeClaim"
		{mirrors: []string{"scheduling:3684"}, name: "K: a claim being deleted makes its pod unschedulable",
			in: input(volumes(zonal(), st.Claim(st.ClaimOptions{Name: "data", Class: st.Str("zonal"), Deleting: true})),
				pods(pod(po{Name: "p", Claims: []string{"data"}}))),
			want: []check{claims(0), unschedulable("p", "being deleted")}},
		// Karpenter scheduling:3707: "should not launch nodes for pod with bound persistentVolume that is marked for deletion"
		{mirrors: []string{"scheduling:3707"}, name: "K: a volume being deleted makes its pod unschedulable",
			in: input(volumes(st.Volume(st.VolumeOptions{Name: "vol", Deleting: true}), claim("p-eph-0", nil, "vol")),
				pods(eph("p", nil, po{}))),
			want: []check{claims(0), unschedulable("p", "PersistentVolume vol", "being deleted")}},
		// Karpenter scheduling:3749: "should not launch nodes for pod with Lost persistentVolumeClaim"
		{mirrors: []string{"scheduling:3749"}, name: "K: a Lost claim makes its pod unschedulable",
			in: input(volumes(zonal(), st.Claim(st.ClaimOptions{Name: "data", Class: st.Str("zonal"), Phase: corev1.ClaimLost})),
				pods(pod(po{Name: "p", Claims: []string{"data"}}))),
			want: []check{claims(0), unschedulable("p", "Lost")}},
		// Karpenter scheduling:3807: "should handle pods with PVCs with defined volumeName" (when pv.kubernetes.io/bind-completed is missing)
		// Karpenter scheduling:3808: "should handle pods with PVCs with defined volumeName" (when pv.kubernetes.io/bind-completed is present)
		{mirrors: []string{"scheduling:3807", "scheduling:3808"}, name: "K: a claim naming its volume counts as bound only once the binding completed",
			in: input(volumes(zonal(), st.Volume(st.VolumeOptions{Name: "vol-a"}), st.Volume(st.VolumeOptions{Name: "vol-b"}),
				st.Claim(st.ClaimOptions{Name: "binding", Class: st.Str("zonal"), Volume: "vol-a", Binding: true}), claim("bound", st.Str("zonal"), "vol-b")),
				pods(pod(po{Name: "binding", Claims: []string{"binding"}}), pod(po{Name: "bound", Claims: []string{"bound"}}))),
			want: []check{unschedulable("binding", "binding is not complete"), fromPool("bound", "default")}},
		// Karpenter scheduling:3859: "should launch nodes for pods with ephemeral volume without a storage class when the PVC is bound" (non-existent storage class)
		// Karpenter scheduling:3860: "should launch nodes for pods with ephemeral volume without a storage class when the PVC is bound" (explicitly disabled storage class (empty string))
		{mirrors: []string{"scheduling:3859", "scheduling:3860"}, name: "K: ephemeral volumes whose bound claims name a missing or empty StorageClass schedule",
			in: input(volumes(st.Volume(st.VolumeOptions{Name: "pv-a"}), st.Volume(st.VolumeOptions{Name: "pv-b"}),
				claim("missing-eph-0", st.Str("non-existent"), "pv-a"), claim("empty-eph-0", st.Str(""), "pv-b")),
				pods(eph("missing", st.Str("non-existent"), po{}), eph("empty", st.Str(""), po{}))),
			want: []check{allScheduled(), claims(1)}},
		// Karpenter scheduling:3895: "should not launch nodes for pods with ephemeral volume without a storage class when the PVC is unbound" (non-existent storage class)
		// Karpenter scheduling:3896: "should not launch nodes for pods with ephemeral volume without a storage class when the PVC is unbound" (explicitly disabled storage class (empty string))
		{mirrors: []string{"scheduling:3895", "scheduling:3896"}, name: "K: ephemeral volumes of a missing or empty StorageClass launch nothing",
			in:   input(volumes(), pods(eph("missing", st.Str("non-existent"), po{}), eph("empty", st.Str(""), po{}))),
			want: []check{claims(0), unschedulable("missing", "StorageClass non-existent does not exist"), unschedulable("empty", "names no StorageClass")}},

		// Karpenter topology:3060: "should schedule pod with PVC and TSC minDomains=3 when pods are spread across 3 zones"
		{mirrors: []string{"topology:3060"}, name: "K: a volume's zone narrows the node, not the domains a zonal spread counts",
			in: input(volumes(pv("test-pv", zoneA), claim("test-pvc", nil, "test-pv")),
				nodes(zoneNode("a", zoneA, true, bound3("a")...), zoneNode("b", zoneB, true, bound3("b")...), zoneNode("c", zoneC, true, bound3("c")...)),
				pods(pod(po{Name: "p", CPU: "1", Labels: tLabels, Claims: []string{"test-pvc"}, Spread: []corev1.TopologySpreadConstraint{minDomains(tSpread(zoneKey, 1), 3)}}))),
			want: []check{claimZones("p", zoneA)}},

		// Not a Karpenter case: without volume objects in the input (a caller
		// that did not read them) pods' volumes restrict nothing.
		{name: "volumes not read: a pod's claims restrict nothing",
			in:   input(pods(pod(po{Name: "p", Claims: []string{"data"}}))),
			want: []check{allScheduled(), claims(1)}},
		// An ephemeral volume whose claim the controller has not created yet
		// is planned from its template (the default class when it names none).
		{name: "an ephemeral volume not created yet is planned from its template and the default class",
			in: input(volumes(st.Class(st.ClassOptions{Name: "old-default", Zones: []string{zoneA}, Default: true, Created: metav1.Unix(100, 0)}),
				st.Class(st.ClassOptions{Name: "new-default", Zones: []string{zoneB}, Default: true, Created: metav1.Unix(200, 0)})),
				pods(eph("p", nil, po{}))),
			want: []check{claimZones("p", zoneB)}},
		// An unbound claim naming no class gets the default class (the PV
		// controller assigns it); an empty name is no class.
		{name: "an unbound claim naming no StorageClass gets the default class",
			in: input(volumes(st.Class(st.ClassOptions{Name: "gp3", Zones: []string{zoneC}, Default: true}), claim("data", nil, "")),
				pods(pod(po{Name: "p", Claims: []string{"data"}}))),
			want: []check{claimZones("p", zoneC)}},
		// Existing nodes: a pod with a zonal volume goes to a node in its
		// volume's zone, not to the one with more room elsewhere.
		{name: "an existing node outside the volume's zone is passed over for one in it",
			in: input(volumes(pv("vol", zoneB), claim("data", nil, "vol")),
				nodes(zoneNode("in-a", zoneA, false), zoneNode("in-b", zoneB, false)),
				pods(pod(po{Name: "p", CPU: "1", Claims: []string{"data"}}))),
			want: []check{onNode("p", "in-b")}},
		// Two volumes of zones that exclude each other.
		{name: "two volumes in different zones: no node attaches both",
			in:   input(volumes(pv("va", zoneA), pv("vb", zoneB), claim("a", nil, "va"), claim("b", nil, "vb")), pods(pod(po{Name: "p", Claims: []string{"a", "b"}}))),
			want: []check{claims(0), unschedulable("p", "exclude each other", "PersistentVolume va", "PersistentVolume vb")}},
		// StatefulSet replicas with one volume each in different zones each
		// get a node in their own zone.
		{name: "three replicas with volumes in three zones get a node in each",
			in: input(volumes(pv("v0", zoneA), pv("v1", zoneB), pv("v2", zoneC), claim("data-db-0", nil, "v0"), claim("data-db-1", nil, "v1"), claim("data-db-2", nil, "v2")),
				pods(pod(po{Name: "db-0", CPU: "1", Claims: []string{"data-db-0"}}), pod(po{Name: "db-1", CPU: "1", Claims: []string{"data-db-1"}}),
					pod(po{Name: "db-2", CPU: "1", Claims: []string{"data-db-2"}}))),
			want: []check{claims(3), claimZones("db-0", zoneA), claimZones("db-1", zoneB), claimZones("db-2", zoneC)}},
	}
}

// bound3 is one pod labelled test=test bound to the named node.
func bound3(node string) []*corev1.Pod {
	return []*corev1.Pod{pod(po{Name: "on-" + node, Labels: tLabels, NodeName: node})}
}

// minDomains sets a spread constraint's minDomains.
func minDomains(c corev1.TopologySpreadConstraint, n int32) corev1.TopologySpreadConstraint {
	c.MinDomains = &n
	return c
}
