package player

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/test/localcloud/cloudfault"
	"github.com/nodewright/nodewright/test/report"
	"github.com/nodewright/nodewright/test/scenario"
)

// fakeCloud records what faults do to it.
type fakeCloud struct {
	mu    sync.Mutex
	calls []string
}

func (c *fakeCloud) record(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf(format, args...))
}

func (c *fakeCloud) SendEvent(_ context.Context, sample, id string, _ map[string]any) error {
	c.record("event %s %s", sample, id)
	return nil
}
func (c *fakeCloud) InstanceZone(context.Context, string) (string, error) { return "us-east-1a", nil }
func (c *fakeCloud) After(d time.Duration, what string, _ func(context.Context) error) {
	c.record("after %s %s", d, what)
}
func (c *fakeCloud) Terminate(_ context.Context, id string) error {
	c.record("terminate %s", id)
	return nil
}
func (c *fakeCloud) Stop(_ context.Context, id string) error { c.record("stop %s", id); return nil }
func (c *fakeCloud) Now() time.Time                          { return time.Unix(0, 0) }
func (c *fakeCloud) Region() string                          { return "us-east-1" }

// playerWithNode is a player whose observer sees one Nodewright node,
// n1 on instance i-0123, and whose faults go to cloud.
func playerWithNode(t *testing.T, cloud cloudfault.Cloud) *player {
	t.Helper()
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	o := &observer{now: time.Now, start: time.Now(), pods: f.Core().V1().Pods().Informer(), nodes: f.Core().V1().Nodes().Informer()}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{apis.LabelNodePool: "default", apis.LabelCapacityType: "spot"}},
		Spec:       corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-0123"},
	}
	if err := o.nodes.GetStore().Add(n); err != nil {
		t.Fatal(err)
	}
	return &player{obs: o, faults: cloud}
}

// TestEveryFaultParsesAndPlays: the fault registry, the scenario parser
// and the player agree: every registered fault is accepted by an
// interrupt step and played by the player onto the node's instance, and
// a fault that is not registered is refused with its path and the list
// of known ones.
func TestEveryFaultParsesAndPlays(t *testing.T) {
	names := cloudfault.Names()
	if len(names) == 0 {
		t.Fatal("no faults registered")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			doc := fmt.Sprintf("name: x\nsteps:\n  - interrupt: {kind: %s, node: n1, notice: 1s}\n", name)
			sc, err := scenario.Parse("s.yaml", []byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			cloud := &fakeCloud{}
			pl := playerWithNode(t, cloud)
			if err := sc.Steps[0].Play(context.Background(), pl); err != nil {
				t.Fatal(err)
			}
			if len(cloud.calls) == 0 || !strings.Contains(strings.Join(cloud.calls, "; "), "i-0123") {
				t.Errorf("the fault did nothing to the node's instance: %v", cloud.calls)
			}
			if tl := pl.obs.timeline; len(tl) != 1 || tl[0].Kind != report.KindInterruption || !strings.Contains(tl[0].Detail, name+" on node n1") {
				t.Errorf("timeline %+v", tl)
			}
		})
	}
	_, err := scenario.Parse("s.yaml", []byte("name: x\nsteps:\n  - interrupt: {kind: meteor}\n"))
	want := `s.yaml:3: steps[0].interrupt.kind: unknown interruption "meteor" (known: ` + strings.Join(names, ", ") + ")"
	if err == nil || err.Error() != want {
		t.Errorf("unknown fault: %v, want %s", err, want)
	}
}
