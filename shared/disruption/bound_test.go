package disruption

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

func zoneSpread(app string) podOpt {
	return func(p *corev1.Pod) {
		p.Labels["app"] = app
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints,
			st.Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, map[string]string{"app": app}))
	}
}

func hostSpread(app string) podOpt {
	return func(p *corev1.Pod) {
		p.Labels["app"] = app
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints,
			st.Spread(apis.LabelHostname, 1, corev1.DoNotSchedule, map[string]string{"app": app}))
	}
}

// zoneAffinity: the pod must share a zone with a pod labelled app=to.
func zoneAffinity(to string) podOpt {
	return func(p *corev1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{}
		}
		p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{st.Term(corev1.LabelTopologyZone, map[string]string{"app": to})},
		}
	}
}

// TestSummarisedSimulationDecidesAsFull: a tick whose simulations hand the
// solver the other nodes' bound pods summarised (scheduling.Summarise)
// decides and reports exactly as one that hands them in full, on clusters
// where the candidates' pods spread over, attract or repel the pods of
// other nodes and of one another; and the summaries are used.
func TestSummarisedSimulationDecidesAsFull(t *testing.T) {
	cases := []struct {
		name  string
		build func(w *world)
	}{
		{
			name: "zone spread across candidates and other nodes",
			build: func(w *world) {
				for i, n := range []string{"a", "b", "c", "d"} {
					w.node(n, "c4", od, inZone([]string{zoneA, zoneB}[i%2]))
				}
				w.pods("a", 3, "900m", zoneSpread("api"))
				w.pods("b", 3, "900m", zoneSpread("api"))
				w.pods("c", 1, "500m", zoneSpread("api"))
				w.pods("d", 1, "500m", zoneSpread("api"))
			},
		},
		{
			name: "hostname spread and anti-affinity among candidates",
			build: func(w *world) {
				for _, n := range []string{"a", "b", "c", "d", "e"} {
					w.node(n, "c4", od)
				}
				w.pods("a", 2, "400m", hostSpread("cache"))
				w.pods("b", 1, "400m", hostSpread("cache"))
				w.pods("c", 1, "300m", antiAffinity("solo"))
				w.pods("d", 1, "300m", antiAffinity("solo"))
				w.pods("e", 2, "500m")
			},
		},
		{
			name: "pod affinity to pods bound to other nodes",
			build: func(w *world) {
				w.node("db", "c8", od, inZone(zoneB))
				w.pods("db", 4, "1", labelled("app", "db"))
				for i, n := range []string{"a", "b", "c"} {
					w.node(n, "c4", od, inZone([]string{zoneA, zoneB, zoneB}[i]))
				}
				w.pods("a", 1, "500m", labelled("app", "web"), zoneAffinity("db"))
				w.pods("b", 1, "500m", labelled("app", "web"), zoneAffinity("db"))
				w.pods("c", 2, "700m", zoneSpread("api"))
			},
		},
		{
			name: "packed: every candidate simulated and rejected",
			build: func(w *world) {
				onDemandOnly(w.pools[0])
				for i, n := range []string{"a", "b", "c", "d", "e", "f"} {
					w.node(n, "c2", od, inZone([]string{zoneA, zoneB}[i%2]))
					w.pods(n, 2, "900m", zoneSpread("api"), zoneAffinity("api"))
				}
			},
		},
		{
			name: "repelling pods on other nodes, unconstrained candidates",
			build: func(w *world) {
				w.node("x", "c8", od)
				w.pods("x", 1, "500m", antiAffinity("web"))
				w.pods("x", 2, "1")
				for _, n := range []string{"a", "b", "c"} {
					w.node(n, "c2", od)
					w.pods(n, 1, "400m")
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			tc.build(w)

			in := w.inputs()
			v := newView(&in)
			v.baseline()
			s := newSim(v)
			used := false
			for _, c := range v.nodes {
				if len(c.moving) == 0 {
					continue
				}
				sin, _ := s.input(map[string]bool{c.name(): true}, c.moving, v.typesByPrice)
				for _, n := range sin.Nodes {
					used = used || n.Bound != nil
				}
			}
			if !used {
				t.Fatal("no simulation's nodes were summarised")
			}

			// A simulation after an earlier command of the run moved pods
			// (copies the run's summaries were not made for) places them
			// as in full too.
			moved := func() string {
				in := w.inputs()
				v := newView(&in)
				v.baseline()
				s := newSim(v)
				var cands []*nodeInfo
				for _, c := range v.nodes {
					if len(c.moving) > 0 {
						cands = append(cands, c)
					}
				}
				first := s.simulate(cands[:1], v.typesByPrice, false)
				if first.res == nil {
					return "first: " + first.fail
				}
				s.apply(cands[:1], first.res, nil)
				var out []string
				for _, c := range cands[1:] {
					o := s.simulate([]*nodeInfo{c}, v.typesByPrice, true)
					out = append(out, c.name()+": "+o.fail+" "+mustJSON(t, o.res))
				}
				return mustJSON(t, out)
			}
			movedSummarised := moved()
			summariseBound = false
			t.Cleanup(func() { summariseBound = true })
			if got, want := movedSummarised, moved(); got != want {
				t.Errorf("after a move, simulations summarised:\n%s\nin full:\n%s", got, want)
			}
			summariseBound = true

			cmds, rep := Decide(w.inputs())
			summariseBound = false
			t.Cleanup(func() { summariseBound = true })
			fullCmds, fullRep := Decide(w.inputs())
			summariseBound = true
			if got, want := mustJSON(t, cmds), mustJSON(t, fullCmds); got != want {
				t.Errorf("commands summarised:\n%s\nin full:\n%s", got, want)
			}
			if got, want := mustJSON(t, rep), mustJSON(t, fullRep); got != want {
				t.Errorf("report summarised:\n%s\nin full:\n%s", got, want)
			}
			t.Logf("%q, %d solves, rejected %v", summaries(cmds), rep.Solves, rep.Rejected)
		})
	}
}
