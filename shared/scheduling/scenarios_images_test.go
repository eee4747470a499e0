package scheduling_test

import (
	"math"
	"testing"

	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"

	"github.com/nodewright/nodewright/shared/nodecost"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// imageScenarios: the EC2NodeClass's image decides a node's operating
// system: pods and DaemonSets that select one are planned, or counted, only
// on the pools whose image runs it, and a Windows node is priced with its
// licence.
func imageScenarios() []scenario {
	agents := daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "linux-agent", CPU: "1", NodeSelector: labels(osKey, "linux")}),
		st.DaemonSet(st.DaemonSetOptions{Name: "windows-agent", CPU: "500m", NodeSelector: labels(osKey, "windows")}))
	return []scenario{
		{
			name: "Linux DaemonSets are not counted on Windows nodes, nor Windows ones on Linux nodes",
			in: input(append(windowsPools(), agents, pods(pod(po{Name: "linux", CPU: "1", NodeSelector: labels(osKey, "linux")}),
				pod(po{Name: "windows", CPU: "1", NodeSelector: labels(osKey, "windows")})))...),
			want: []check{claims(2), fromPool("linux", "default"), fromPool("windows", "windows"),
				custom(requestsCPU("linux", "2")), custom(requestsCPU("windows", "1500m"))},
		},
		{
			name: "a pod that selects Linux is never planned on a Windows pool",
			in:   input(pools(winPool()), nodeClasses(winClass()), pods(pod(po{Name: "linux", NodeSelector: labels(osKey, "linux")}))),
			want: []check{claims(0), unschedulable("linux", "NodePool windows", osKey)},
		},
		{
			name: "a pool that requires Windows of a Linux image launches nothing",
			in:   input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(osKey, opIn, "windows"))})), pods(pod(po{Name: "w", NodeSelector: labels(osKey, "windows")}))),
			want: []check{claims(0), unschedulable("w", "NodePool default")},
		},
		{
			name: "a Windows node is priced with its licence per vCPU",
			in:   input(append(windowsPools(), pods(pod(po{Name: "w", CPU: "1", NodeSelector: labels(osKey, "windows")})))...),
			want: []check{fromPool("w", "windows"), custom(func(t *testing.T, p *plan) {
				nc, ok := p.claim(t, "w")
				if !ok {
					return
				}
				it := typeByName(p.in, nc.InstanceTypes[0])
				want := nodecost.WindowsLicence.PerVCPUHour * float64(it.VCPU)
				if math.Abs(nc.LicencePerHour-want) > 1e-9 {
					t.Errorf("licence %v, want %v for %d vCPUs", nc.LicencePerHour, want, it.VCPU)
				}
				offering := math.Inf(1)
				for _, o := range it.Offerings(p.in.Zones, p.in.Spot) {
					if o.Available && o.CapacityType == nc.CapacityType {
						offering = min(offering, o.Price)
					}
				}
				if math.Abs(nc.PricePerHour-nc.NodeCostPerHour-(offering+want)) > 1e-9 {
					t.Errorf("price %v, want the offering's %v and the licence %v", nc.PricePerHour, offering, want)
				}
			})},
		},
		{
			// Linux: the 4-vCPU type ($0.10) is cheaper than the 1-vCPU one
			// ($0.12); with the licence it costs $0.284 against $0.166.
			name: "the licence makes a Windows pool take the type with fewer vCPUs",
			in: input(append(windowsPools(), licenceTypes(), pods(pod(po{Name: "l", CPU: "500m", NodeSelector: labels(osKey, "linux")}),
				pod(po{Name: "w", CPU: "500m", NodeSelector: labels(osKey, "windows")})))...),
			want: []check{firstType("l", "big"), firstType("w", "small")},
		},
		{
			name: "the region's Windows prices stand in for the per-vCPU estimate",
			in: input(append(windowsPools(), licenceTypes(), windowsLicence("big", 0.01),
				pods(pod(po{Name: "w", CPU: "500m", NodeSelector: labels(osKey, "windows")})))...),
			want: []check{firstType("w", "big"), custom(func(t *testing.T, p *plan) {
				if nc, ok := p.claim(t, "w"); ok && math.Abs(nc.LicencePerHour-0.01) > 1e-12 {
					t.Errorf("licence %v, want the region's 0.01", nc.LicencePerHour)
				}
			})},
		},
		{
			name: "a Linux node of the same pods pays no licence",
			in:   input(append(windowsPools(), pods(pod(po{Name: "l", CPU: "1", NodeSelector: labels(osKey, "linux")})))...),
			want: []check{fromPool("l", "default"), custom(func(t *testing.T, p *plan) {
				if nc, ok := p.claim(t, "l"); ok && nc.LicencePerHour != 0 {
					t.Errorf("licence %v on a Linux node", nc.LicencePerHour)
				}
			})},
		},
	}
}

// licenceTypes are a 4-vCPU type cheaper on-demand than a 1-vCPU one, with
// on-demand offerings only.
func licenceTypes() opt {
	ts := []*catalog.InstanceType{st.Type(st.TypeOptions{Name: "big", VCPU: 4, Price: 0.10}), st.Type(st.TypeOptions{Name: "small", VCPU: 1, Price: 0.12})}
	return func(in *scheduling.Input) { in.InstanceTypes, in.Spot = ts, nil }
}

// windowsLicence sets the region's Windows licence of one type of the
// input's catalog.
func windowsLicence(typ string, perHour float64) opt {
	return func(in *scheduling.Input) {
		for i, it := range in.InstanceTypes {
			if it.Name == typ {
				c := *it
				c.WindowsLicence = perHour
				in.InstanceTypes[i] = &c
			}
		}
	}
}
