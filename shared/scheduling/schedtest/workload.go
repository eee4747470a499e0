package schedtest

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/refdata"
)

// Diverse workload labels. Plain and spread pods share LabelDiverse (as in
// Karpenter's benchmark, where generic pods and spread pods draw from the same
// random labels, so spread selectors also count plain pods); self-affinity pods
// use LabelDiverseAffinity; anti-affinity pods all carry LabelDiverseAnti.
const (
	LabelDiverse         = "my-label"
	LabelDiverseAffinity = "my-affinity"
	LabelDiverseAnti     = "app"
	ValueDiverseAnti     = "nginx"
)

// The requests and label values the diverse workload draws from (read only).
var (
	diverseCPU    = []string{"100m", "250m", "500m", "1", "1.5"}
	diverseMemory = []string{"100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"}
	diverseValues = []string{"a", "b", "c", "d", "e", "f", "g"}
)

// DiversePods builds the scheduling benchmark's workload the way Karpenter's
// own benchmark (scheduling_benchmark_test.go) builds it, with the five kinds
// of pods the issue names, n/5 of each in this order (the remainder plain):
//
//   - plain pods;
//   - zonal topology spread: maxSkew 1, DoNotSchedule, selector on the pod's
//     own my-label value;
//   - hostname topology spread, the same;
//   - zonal pod self-affinity: required, topologyKey zone, selector on the
//     pod's own my-affinity value (7 groups, each held in one zone);
//   - hostname pod anti-affinity: required, every such pod repels every
//     other (app=nginx), so each needs a node of its own.
//
// Each pod's label value is one of a..g, its CPU request one of 100m, 250m,
// 500m, 1, 1.5 and its memory one of 100Mi, 256Mi, 512Mi, 1Gi, 2Gi, 4Gi, drawn
// from a PCG generator seeded with seed, so a seed always gives the same pods.
// Pods are named diverse-<i> in namespace default.
func DiversePods(n int, seed uint64) []*corev1.Pod {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	kinds := []func(o *PodOptions, rng *rand.Rand){
		plainPod, zoneSpreadPod, hostSpreadPod, zoneAffinityPod, hostAntiAffinityPod,
	}
	per := n / len(kinds)
	pods := make([]*corev1.Pod, 0, n)
	for i := 0; i < n; i++ {
		kind := plainPod
		if k := i / max(per, 1); per > 0 && k < len(kinds) {
			kind = kinds[k]
		}
		o := PodOptions{
			Name:   fmt.Sprintf("diverse-%d", i),
			CPU:    diverseCPU[rng.IntN(len(diverseCPU))],
			Memory: diverseMemory[rng.IntN(len(diverseMemory))],
		}
		kind(&o, rng)
		pods = append(pods, Pod(o))
	}
	return pods
}

func randomValue(rng *rand.Rand) string { return diverseValues[rng.IntN(len(diverseValues))] }

func plainPod(o *PodOptions, rng *rand.Rand) {
	o.Labels = map[string]string{LabelDiverse: randomValue(rng)}
}

func zoneSpreadPod(o *PodOptions, rng *rand.Rand) {
	plainPod(o, rng)
	o.Spread = []corev1.TopologySpreadConstraint{Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, o.Labels)}
}

func hostSpreadPod(o *PodOptions, rng *rand.Rand) {
	plainPod(o, rng)
	o.Spread = []corev1.TopologySpreadConstraint{Spread(corev1.LabelHostname, 1, corev1.DoNotSchedule, o.Labels)}
}

func zoneAffinityPod(o *PodOptions, rng *rand.Rand) {
	o.Labels = map[string]string{LabelDiverseAffinity: randomValue(rng)}
	o.Affinity = []corev1.PodAffinityTerm{Term(corev1.LabelTopologyZone, o.Labels)}
}

func hostAntiAffinityPod(o *PodOptions, _ *rand.Rand) {
	o.Labels = map[string]string{LabelDiverseAnti: ValueDiverseAnti}
	o.AntiAffinity = []corev1.PodAffinityTerm{Term(corev1.LabelHostname, o.Labels)}
}

// ProductionPool is the users' production NodePool and its EC2NodeClass, read
// unchanged from the shared examples (nodepool-default.yaml: c/m/r,
// medium..8xlarge, spot and on-demand, three zones; ec2nodeclass-default.yaml)
// except that its limits (1000 cpu) are lifted, for workloads larger than the
// pool allows.
func ProductionPool() ([]*apis.NodePool, []*apis.EC2NodeClass, error) {
	var paths []string
	for _, f := range []string{"nodepool-default.yaml", "ec2nodeclass-default.yaml"} {
		p, err := refdata.Example(f)
		if err != nil {
			return nil, nil, err
		}
		paths = append(paths, p)
	}
	cfg, err := apis.LoadFiles(paths...)
	if err != nil {
		return nil, nil, err
	}
	for _, np := range cfg.NodePools {
		np.Spec.Limits = nil
	}
	return cfg.NodePools, cfg.NodeClasses, nil
}

// LabelDistinct is the label DistinctPods gives each pod its own value of.
const LabelDistinct = "distinct"

// DistinctPods builds the solver's worst case: n pods that each carry their
// own label value and a required hostname anti-affinity to it, so no two
// share a scheduling signature and every pod is a group of its own (the
// anti-affinity keeps only copies of a pod apart, so they may share nodes).
// Requests are drawn as in DiversePods. Pods are named distinct-<i>.
func DistinctPods(n int, seed uint64) []*corev1.Pod {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		labels := map[string]string{LabelDistinct: fmt.Sprintf("pod-%d", i)}
		pods[i] = Pod(PodOptions{
			Name:         fmt.Sprintf("distinct-%d", i),
			CPU:          diverseCPU[rng.IntN(len(diverseCPU))],
			Memory:       diverseMemory[rng.IntN(len(diverseMemory))],
			Labels:       labels,
			AntiAffinity: []corev1.PodAffinityTerm{Term(corev1.LabelHostname, labels)},
		})
	}
	return pods
}
