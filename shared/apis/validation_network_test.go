package apis

import "testing"

// The networking fields are checked as Karpenter's schema and CEL rules
// check them: each case is refused with a message naming the field, and
// the valid shapes load.
func TestNetworkingValidation(t *testing.T) {
	primary := "- {networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}\n"
	invalid := []struct{ name, extra, want string }{
		{"no primary interface", "networkInterfaces:\n- {networkCardIndex: 0, deviceIndex: 1, interfaceType: interface}\n",
			`spec.networkInterfaces: has no primary interface: add one with networkCardIndex 0, deviceIndex 0 and interfaceType interface`},
		{"repeated indexes", "networkInterfaces:\n" + primary + "- {networkCardIndex: 0, deviceIndex: 0, interfaceType: efa-only}\n",
			`spec.networkInterfaces[1]: networkCardIndex 0 and deviceIndex 0 repeat an earlier interface's`},
		{"two efa-only on a card", "networkInterfaces:\n" + primary + "- {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}\n- {networkCardIndex: 1, deviceIndex: 1, interfaceType: efa-only}\n",
			`spec.networkInterfaces[2].interfaceType: a second efa-only interface on network card 1: a card takes at most one`},
		{"interface type", "networkInterfaces:\n" + primary + "- {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa}\n",
			`spec.networkInterfaces[1].interfaceType: "efa" is not one of interface, efa-only`},
		{"negative device index", "networkInterfaces:\n" + primary + "- {networkCardIndex: 1, deviceIndex: -1, interfaceType: interface}\n",
			`spec.networkInterfaces[1].deviceIndex: -1 must not be negative`},
		{"empty connection tracking", "connectionTracking: {}\n",
			`spec.connectionTracking: sets none of tcpEstablishedTimeout, udpStreamTimeout, udpTimeout: set at least one, or remove connectionTracking`},
		{"tcp timeout", "connectionTracking: {tcpEstablishedTimeout: 59}\n",
			`spec.connectionTracking.tcpEstablishedTimeout: 59 is out of range 60..432000`},
		{"udp stream timeout", "connectionTracking: {udpStreamTimeout: 181}\n",
			`spec.connectionTracking.udpStreamTimeout: 181 is out of range 60..180`},
		{"udp timeout", "connectionTracking: {udpTimeout: 29}\n",
			`spec.connectionTracking.udpTimeout: 29 is out of range 30..60`},
		{"nested virtualization", "cpuOptions: {nestedVirtualization: 'on'}\n",
			`spec.cpuOptions.nestedVirtualization: "on" is not one of enabled, disabled`},
		{"placement group neither", "placementGroupSelector: {}\n",
			`spec.placementGroupSelector: sets neither name nor id: set one of them`},
		{"placement group both", "placementGroupSelector: {name: training, id: pg-0123}\n",
			`spec.placementGroupSelector.id: must not be set together with name: set one of them`},
		{"placement group id", "placementGroupSelector: {id: group-1}\n",
			`spec.placementGroupSelector.id: "group-1" is not a placement group ID (pg-...)`},
		{"ipPrefixCount", "ipPrefixCount: -1\n", `spec.ipPrefixCount: -1 must not be negative`},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(nodeClassDoc(tc.extra)), "test.yaml")
			if err == nil {
				t.Fatalf("no error for %s", tc.extra)
			}
			if got, want := err.Error(), ncPrefix+tc.want; got != want {
				t.Errorf("error\n got: %s\nwant: %s", got, want)
			}
		})
	}
	valid := []string{
		"networkInterfaces:\n" + primary + "- {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}\n",
		"connectionTracking: {tcpEstablishedTimeout: 432000, udpStreamTimeout: 60, udpTimeout: 60}\n",
		"cpuOptions: {nestedVirtualization: enabled}\n",
		"placementGroupSelector: {name: training}\n",
		"placementGroupSelector: {id: pg-0123abc}\n",
		"ipPrefixCount: 2\n",
	}
	for _, extra := range valid {
		if _, err := Parse([]byte(nodeClassDoc(extra)), "test.yaml"); err != nil {
			t.Errorf("%s: %v", extra, err)
		}
	}
}
