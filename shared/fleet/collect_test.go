package fleet

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// Launch templates no launch needs are deleted, oldest first and a
// bounded number at a time: not those a record's launch names, not those
// younger than the grace period or used within it by this launcher, never
// a template another tool made.
func TestCollectTemplatesDeletesThoseNoLaunchNeeds(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.ec2.now = f.now.Add(-2 * time.Hour) // the current template was made two hours ago
	p, err := f.l.Prepare(ctx, Request{Name: "default-abcde", NodeClass: defaultNodeClass(), Claim: claim([]string{"c5.large"}, []string{"us-east-1a"})})
	if err != nil {
		t.Fatal(err)
	}
	current := p.TemplateNames()[0]
	prefix := templatePrefix(testCluster.Name) + "-"
	seed := func(name string, age time.Duration) {
		f.ec2.templates[name] = &ec2.CreateLaunchTemplateInput{}
		f.ec2.created[name] = f.now.Add(-age)
	}
	seed(prefix+"old0000000000001", 3*time.Hour)         // stale
	seed(prefix+"old0000000000002", 2*time.Hour)         // stale, younger
	seed(prefix+"kept000000000000", 5*time.Hour)         // a record's launch names it
	seed(prefix+"young00000000000", 10*time.Minute)      // within the grace period
	seed("karpenter.k8s.aws/1234567890123", 9*time.Hour) // not Nodewright's
	if _, err := f.l.Prepare(ctx, Request{Name: "default-fghij", NodeClass: defaultNodeClass(), Claim: claim([]string{"c5.large"}, []string{"us-east-1a"})}); err != nil {
		t.Fatal(err) // and used now
	}
	keep := map[string]bool{prefix + "kept000000000000": true}

	deleted, err := f.l.CollectTemplates(ctx, keep, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{prefix + "old0000000000001"}; !reflect.DeepEqual(deleted, want) {
		t.Errorf("first collection deleted %v, want the oldest stale one %v (one at a time)", deleted, want)
	}
	deleted, err = f.l.CollectTemplates(ctx, keep, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{prefix + "old0000000000002"}; !reflect.DeepEqual(deleted, want) {
		t.Errorf("second collection deleted %v, want %v", deleted, want)
	}
	for _, name := range []string{current, prefix + "kept000000000000", prefix + "young00000000000", "karpenter.k8s.aws/1234567890123"} {
		if slices.Contains(f.ec2.deleted, name) {
			t.Errorf("template %s deleted", name)
		}
	}
	// Unused for the grace period, the current template goes too; a
	// launch that wants it again makes it again.
	f.now = f.now.Add(TemplateGrace)
	if deleted, err = f.l.CollectTemplates(ctx, keep, 10); err != nil || !slices.Contains(deleted, current) {
		t.Errorf("after the grace period: deleted %v, %v; want %s too", deleted, err, current)
	}
}
