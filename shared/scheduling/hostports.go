package scheduling

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/requirements"
)

// hostPort is a host port a container binds: protocol, host IP (empty or
// 0.0.0.0 or :: for every IP) and port. Two pods whose host ports conflict
// cannot share a node.
type hostPort struct {
	protocol corev1.Protocol
	ip       string
	port     int32
}

// podHostPorts lists the host ports a pod's containers bind.
func podHostPorts(p *corev1.Pod) []hostPort {
	var out []hostPort
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			for _, port := range c.Ports {
				if port.HostPort <= 0 {
					continue
				}
				proto := port.Protocol
				if proto == "" {
					proto = corev1.ProtocolTCP
				}
				out = append(out, hostPort{proto, port.HostIP, port.HostPort})
			}
		}
	}
	return out
}

// conflicts says whether two host port sets collide (same protocol and port,
// and the same IP or one of them binds every IP).
func conflicts(a, b []hostPort) bool {
	for _, x := range a {
		for _, y := range b {
			if x.protocol == y.protocol && x.port == y.port && (x.ip == y.ip || isAnyIP(x.ip) || isAnyIP(y.ip)) {
				return true
			}
		}
	}
	return false
}

func isAnyIP(ip string) bool { return ip == "" || ip == "0.0.0.0" || ip == "::" }

// avoidDaemonPorts keeps a pod that binds host ports off the instance types on
// which a daemonset binding the same ports would run: each alternative gets
// "instance-type NotIn [those types]".
func (s *solver) avoidDaemonPorts(g *group, alts []requirements.Requirements) []requirements.Requirements {
	if len(g.hostPorts) == 0 {
		return alts
	}
	taken := newBitset(s.u.n)
	for i, ds := range s.daemons {
		if !conflicts(g.hostPorts, ds.hostPorts) {
			continue
		}
		for _, p := range s.pools {
			if p.daemons != nil {
				taken.or(p.daemons[i])
			}
		}
	}
	if taken.empty() {
		return alts
	}
	var names []string
	taken.each(func(t int) bool {
		names = append(names, s.u.types[t].Name)
		return true
	})
	avoid := requirements.MustNew(apis.LabelInstanceType, corev1.NodeSelectorOpNotIn, names...)
	out := make([]requirements.Requirements, len(alts))
	for i, a := range alts {
		out[i] = a.Add(avoid)
	}
	return out
}
