package snapshot

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nodewright/nodewright/shared/refdata"
)

// FuzzRead: whatever the bytes, Read returns a snapshot or an error (never
// panics), and the same bytes give the same error.
func FuzzRead(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", "cluster.yaml")); err == nil {
		f.Add(data)
	}
	if dir, err := refdata.Examples(); err == nil {
		paths, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, p := range paths {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data)
			}
		}
	}
	f.Add([]byte(`{"apiVersion":"v1","kind":"PodList","items":[{"metadata":{"name":"a"},"spec":{"nodeName":"n"}}]}`))
	f.Add([]byte("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec: {replicas: 3, template: {spec: {containers: [{name: c}]}}}\n"))
	// Amounts too large to count (MilliValue wraps them negative): the
	// reader keeps them for the scheduler, which refuses them with a reason.
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"huge"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"9223372036854776","memory":"9223372036854775807"}}}]}}`))
	f.Add([]byte("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: '9223372036854776', memory: 1e18, pods: '9223372036854775807'}}\n"))
	f.Add([]byte("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\nspec: {limits: {cpu: '9223372036854776', memory: 1e18}}\n"))
	// The fuzzer turns replicas: 3 into 30000 in a few steps; at the
	// product's cap (100,000 pods) an input takes a second and the run
	// explores nothing else. The cap's own check is the same code at 1,000.
	read := func(data []byte) (*Snapshot, error) {
		r := newReader()
		r.maxWorkload = 1000
		r.source(Source{Name: "fuzz.yaml", Data: data})
		return r.finish()
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := read(data)
		if (s == nil) == (err == nil) {
			t.Fatalf("snapshot %v and error %v", s, err)
		}
		_, again := read(data)
		if (err == nil) != (again == nil) || err != nil && err.Error() != again.Error() {
			t.Fatalf("two reads differ: %v / %v", err, again)
		}
	})
}
