package fleet

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/shared/names"
)

// Launch templates are named by their content, so every change of an
// EC2NodeClass, a NodePool's labels or taints, or an AMI makes new ones and
// leaves the old behind; the region's quota is 5,000. Templates no launch
// needs are deleted, as Karpenter deletes those its cache lets go.
const (
	// TemplateGrace is how long a launch template is kept after it was
	// created, or after this launcher last used it: longer than any
	// launch takes from resolving its request to writing its records, and
	// than a launcher caches a template (DefaultCacheTTL).
	TemplateGrace = time.Hour
	// MaxTemplateDeletions bounds the deletions of one collection.
	MaxTemplateDeletions = 20
)

// LaunchTemplate is a launch template this cluster's launchers made.
type LaunchTemplate struct {
	Name    string
	Created time.Time
}

// StaleTemplates picks the templates to delete, oldest first (then by
// name), at most max: those older than grace that no record's launch
// references (keep) and that were not used within grace (lastUsed). Pure.
func StaleTemplates(all []LaunchTemplate, keep map[string]bool, lastUsed map[string]time.Time, now time.Time, grace time.Duration, max int) []string {
	var stale []LaunchTemplate
	for _, t := range all {
		if keep[t.Name] || now.Sub(t.Created) < grace {
			continue
		}
		if at, ok := lastUsed[t.Name]; ok && now.Sub(at) < grace {
			continue
		}
		stale = append(stale, t)
	}
	sort.Slice(stale, func(i, j int) bool {
		if !stale[i].Created.Equal(stale[j].Created) {
			return stale[i].Created.Before(stale[j].Created)
		}
		return stale[i].Name < stale[j].Name
	})
	out := make([]string, 0, min(len(stale), max))
	for _, t := range stale[:min(len(stale), max)] {
		out = append(out, t.Name)
	}
	return out
}

// usage remembers when this launcher last used each template.
type usage struct {
	mu   sync.Mutex
	last map[string]time.Time
}

func (u *usage) touch(name string, at time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.last == nil {
		u.last = map[string]time.Time{}
	}
	u.last[name] = at
}

func (u *usage) snapshot() map[string]time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make(map[string]time.Time, len(u.last))
	for k, v := range u.last {
		out[k] = v
	}
	return out
}

// Templates lists the launch templates this cluster's launchers made: the
// cluster's ownership tag and Nodewright's name prefix (never a template
// of Karpenter's or anyone else's).
func (l *Launcher) Templates(ctx context.Context) ([]LaunchTemplate, error) {
	prefix := templatePrefix(l.cfg.Cluster.Name)
	in := &ec2.DescribeLaunchTemplatesInput{
		Filters:    []ec2types.Filter{{Name: aws.String("tag:" + names.TagKeyCluster(l.cfg.Cluster.Name)), Values: []string{names.TagValueOwned}}},
		MaxResults: aws.Int32(200),
	}
	var out []LaunchTemplate
	for {
		page, err := l.cfg.EC2.DescribeLaunchTemplates(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list launch templates: %w", err)
		}
		for _, t := range page.LaunchTemplates {
			name := aws.ToString(t.LaunchTemplateName)
			if strings.HasPrefix(name, prefix+"-") {
				out = append(out, LaunchTemplate{Name: name, Created: aws.ToTime(t.CreateTime)})
			}
		}
		if aws.ToString(page.NextToken) == "" {
			break
		}
		in.NextToken = page.NextToken
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CollectTemplates deletes at most max of this cluster's launch templates
// that no launch needs any more (StaleTemplates; keep are the templates
// the records' stored launches name) and returns their names. A template
// deleted that a launch wants again is made again.
func (l *Launcher) CollectTemplates(ctx context.Context, keep map[string]bool, max int) ([]string, error) {
	all, err := l.Templates(ctx)
	if err != nil {
		return nil, err
	}
	var deleted []string
	for _, name := range StaleTemplates(all, keep, l.used.snapshot(), l.cfg.Now(), TemplateGrace, max) {
		_, err := l.cfg.EC2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(name)})
		if err != nil && !hasCode(err, "InvalidLaunchTemplateName.NotFoundException") && !hasCode(err, "InvalidLaunchTemplateId.NotFound") {
			return deleted, fmt.Errorf("delete launch template %s: %w", name, err)
		}
		l.templates.forgetKey(name)
		deleted = append(deleted, name)
		l.cfg.Log.Info("launch template deleted: no launch needs it", "name", name)
	}
	return deleted, nil
}
