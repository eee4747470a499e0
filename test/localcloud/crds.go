package localcloud

import (
	"context"
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/shared/apis/crds"
)

// InstallCRDs creates the NodePool, EC2NodeClass and NodeClaim CRDs that
// Nodewright generates (shared/apis/crds) and waits until the API server
// serves the three kinds. CRDs that already exist (Karpenter's, say) are
// kept. Options.InstallCRDs does this during Start.
func (c *Cloud) InstallCRDs(ctx context.Context) error {
	files := crds.Files()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	rc := c.Kube.Discovery().RESTClient()
	for _, n := range names {
		body, err := yaml.YAMLToJSON(files[n])
		if err != nil {
			return fmt.Errorf("install %s: %w", n, err)
		}
		err = rc.Post().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions").
			SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("install %s: %w", n, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.Options.ReadyTimeout)
	defer cancel()
	for _, path := range []string{"/apis/karpenter.sh/v1/nodepools", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses", "/apis/karpenter.sh/v1/nodeclaims"} {
		for {
			err := rc.Get().AbsPath(path).Do(ctx).Error()
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not served: %w (last: %v)", path, ctx.Err(), err)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}
