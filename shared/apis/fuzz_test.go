package apis

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzParse feeds arbitrary bytes to Parse: it must never panic, and what it
// accepts must survive validation, hashing, budgets and a round trip.
func FuzzParse(f *testing.F) {
	seeds := exampleFiles(f)
	seeds = append(seeds, filepath.Join("testdata", "kubectl-get.yaml"), filepath.Join("testdata", "full.yaml"))
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, tc := range invalidCases {
		f.Add([]byte(tc.doc))
	}
	f.Add([]byte(`{"apiVersion":"karpenter.sh/v1","kind":"NodePool","spec":{"limits":{"cpu":"1e999999999"}}}`))
	f.Add([]byte(`{"apiVersion":"karpenter.sh/v1","kind":"NodePool","status":{"resources":{"cpu":1e-9}}}`))
	// Amounts too large to count: refused with their field paths.
	f.Add([]byte(`{"apiVersion":"karpenter.sh/v1","kind":"NodePool","spec":{"limits":{"cpu":"9223372036854776","memory":"9223372036854775807"}}}`))
	f.Add([]byte(`{"apiVersion":"karpenter.k8s.aws/v1","kind":"EC2NodeClass","spec":{"kubelet":{"kubeReserved":{"cpu":"9223372036854776"},"systemReserved":{"memory":"1e18"},"evictionHard":{"memory.available":"9Ei"}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "fuzz.yaml")
		if c == nil {
			t.Fatalf("Parse returned no config (err %v)", err)
		}
		if err != nil {
			_ = err.Error()
		}
		_ = c.Validate()
		now := time.Date(2025, 3, 3, 10, 0, 0, 0, time.UTC)
		for _, np := range c.NodePools {
			_ = np.Hash()
			_, _ = np.AllowedDisruptions(now, 10, DisruptionReasonDrifted)
			b, err := json.Marshal(np)
			if err != nil {
				t.Fatalf("marshal accepted NodePool: %v", err)
			}
			if _, err := Parse(b, "again.json"); err != nil {
				t.Fatalf("accepted NodePool does not parse again: %v\n%s", err, b)
			}
		}
		for _, nc := range c.NodeClasses {
			_ = nc.Hash()
			_ = nc.AMIFamily()
			b, err := json.Marshal(nc)
			if err != nil {
				t.Fatalf("marshal accepted EC2NodeClass: %v", err)
			}
			if _, err := Parse(b, "again.json"); err != nil {
				t.Fatalf("accepted EC2NodeClass does not parse again: %v\n%s", err, b)
			}
		}
	})
}
