package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"

	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/test/harness"
	"github.com/nodewright/nodewright/test/localcloud"
)

// Build builds the cluster of size s into a new snapshot under cache and
// returns its plan. The local cloud it builds on is stopped (etcd cleanly)
// before its data directory is kept.
func Build(ctx context.Context, s Size, cache string, log *slog.Logger) (*Plan, error) {
	start := time.Now()
	dir := snapshotDir(cache, s)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	// Snapshots of other builder versions are never restored again.
	old, _ := filepath.Glob(filepath.Join(cache, "v*-"+filepath.Base(dir)[strings.Index(filepath.Base(dir), "-")+1:]))
	for _, o := range old {
		_ = os.RemoveAll(o)
	}
	work, err := os.MkdirTemp("", "nodewright-scale-build-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if os.Getenv("NODEWRIGHT_SCALE_KEEP") == "" {
			os.RemoveAll(work)
		}
	}()
	lc, err := localcloud.Start(ctx, cloudOptions(work, ""))
	if err != nil {
		return nil, err
	}
	defer lc.Close()
	plan, err := build(ctx, lc, s, log)
	if err != nil {
		return nil, fmt.Errorf("build %s (state %s): %w", s.Name(), work, err)
	}
	items, err := scanItems(ctx, lc)
	if err != nil {
		return nil, err
	}
	if err := lc.Close(); err != nil {
		return nil, fmt.Errorf("stop the local cloud: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Rename(filepath.Join(work, "etcd"), filepath.Join(dir, "etcd")); err != nil {
		if err := localcloud.CopyDir(filepath.Join(work, "etcd"), filepath.Join(dir, "etcd")); err != nil {
			return nil, err
		}
	}
	if err := writeJSON(filepath.Join(dir, "items.json"), items); err != nil {
		return nil, err
	}
	plan.BuildSeconds = time.Since(start).Seconds()
	if err := writeJSON(filepath.Join(dir, "plan.json"), plan); err != nil {
		return nil, err
	}
	log.Info("snapshot kept", "size", s.Name(), "dir", dir, "took", time.Since(start).Round(time.Second).String())
	return plan, nil
}

func build(ctx context.Context, lc *localcloud.Cloud, s Size, log *slog.Logger) (*Plan, error) {
	kc, dc, err := kubeFor(lc)
	if err != nil {
		return nil, err
	}
	cfg, err := deployed()
	if err != nil {
		return nil, err
	}
	flog, err := os.Create(filepath.Join(lc.StateDir, "logs", "functions-build.log"))
	if err != nil {
		return nil, err
	}
	defer flog.Close()
	h, err := newHarness(ctx, lc, cfg, flog, nil, nil)
	if err != nil {
		return nil, err
	}
	nApp := s.Nodes * appPerNode
	nDeploy := (nApp + perDeployment - 1) / perDeployment
	ds, rss, err := workloads(ctx, kc, nDeploy)
	if err != nil {
		return nil, err
	}
	// Measure what the API server takes: the template's 28 pods, one
	// client (the rate the issue quotes), then parallel clients.
	t, err := launchTemplate(ctx, lc, h, kc, dc, rss[0], log)
	if err != nil {
		return nil, fmt.Errorf("template NodeClaim: %w", err)
	}
	apiRate, err := apiCreateRate(ctx, kc)
	if err != nil {
		return nil, err
	}
	log.Info("API server create rate", "podsPerSecond", apiRate)

	plan := &Plan{Version: Version, Size: s, Built: time.Now().UTC().Format(time.RFC3339), SecurityGroup: lc.Seeded.SecurityGroupID, VPC: lc.Seeded.VPCID, APIPodsPerSec: apiRate}
	for i, sn := range lc.Seeded.Subnets {
		plan.Subnets = append(plan.Subnets, sn.ID)
		if sn.ID == t.rec.SubnetID {
			plan.TemplateSubnet = i
		}
	}
	for d := range nDeploy {
		plan.Deployments = append(plan.Deployments, deploymentName(d))
	}
	tags := map[string]string{}
	for _, tg := range t.inst.Tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	spot := t.inst.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot
	for g := 0; g*groupSize < s.Nodes; g++ {
		name := claimName(g * groupSize)
		gt := map[string]string{}
		for k, v := range tags {
			gt[k] = v
		}
		gt[names.TagKeyNodeClaim] = name
		plan.Groups = append(plan.Groups, Group{Name: name, Type: string(t.inst.InstanceType), Count: min(groupSize, s.Nodes-g*groupSize),
			Subnet: g % len(plan.Subnets), Spot: spot, ImageID: aws.ToString(t.inst.ImageId), Tags: gt})
	}
	if err := seedMoto(ctx, lc); err != nil {
		return nil, err
	}
	t0 := time.Now()
	insts, err := launchGroups(ctx, lc, plan.Groups, plan.Subnets, plan.SecurityGroup)
	if err != nil {
		return nil, err
	}
	plan.InstancesPerSc = float64(len(insts)) / time.Since(t0).Seconds()
	log.Info("instances launched", "n", len(insts), "perSecond", plan.InstancesPerSc)
	for i, in := range insts {
		plan.Nodes = append(plan.Nodes, Node{Name: aws.ToString(in.PrivateDnsName), Claim: claimName(i), Instance: aws.ToString(in.InstanceId),
			Zone: aws.ToString(in.Placement.AvailabilityZone), IP: aws.ToString(in.PrivateIpAddress), Spot: spot})
	}
	for _, n := range plan.Nodes {
		if n.Name == "" || n.IP == "" {
			return nil, fmt.Errorf("instance %s: no private DNS name or IP", n.Instance)
		}
	}
	// Records in DynamoDB while the objects go into etcd.
	recDone := make(chan error, 1)
	go func() {
		t0 := time.Now()
		err := putRecords(ctx, lc, plan, t)
		plan.RecordsPerSec = float64(len(plan.Nodes)) / time.Since(t0).Seconds()
		recDone <- err
	}()
	t0 = time.Now()
	if err := writeObjects(ctx, lc, plan, t, ds, rss); err != nil {
		return nil, errors2(err, <-recDone)
	}
	plan.PodsPerSecond = float64(s.Pods) / time.Since(t0).Seconds()
	log.Info("objects written into etcd", "pods", s.Pods, "podsPerSecond", plan.PodsPerSecond)
	if err := <-recDone; err != nil {
		return nil, err
	}
	log.Info("records written", "n", len(plan.Nodes), "perSecond", plan.RecordsPerSec)
	if err := waitServed(ctx, kc, plan); err != nil {
		return nil, err
	}
	return plan, nil
}

func errors2(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func claimName(i int) string { return fmt.Sprintf("default-s%05d", i) }

// apiCreateRate creates 200 pods through the API server (one client, then
// 16) and deletes them; it returns the parallel rate.
func apiCreateRate(ctx context.Context, kc kubernetes.Interface) (float64, error) {
	const n = 200
	t0 := time.Now()
	err := parallel(n, 16, func(i int) error {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rate-%03d", i), Namespace: appNS}, Spec: podSpec(appRequests(), "pause")}
		p.Spec.SchedulerName = "nobody"
		_, err := kc.CoreV1().Pods(appNS).Create(ctx, p, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("API create rate: %w", err)
	}
	rate := n / time.Since(t0).Seconds()
	zero := int64(0)
	err = parallel(n, 16, func(i int) error {
		return kc.CoreV1().Pods(appNS).Delete(ctx, fmt.Sprintf("rate-%03d", i), metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	return rate, err
}

// replacer maps the template's names to node i's.
func replacer(t *template, n Node, subnet string) *strings.Replacer {
	return strings.NewReplacer(
		t.rec.Name, n.Claim, t.rec.NodeName, n.Name, t.rec.InstanceID, n.Instance,
		aws.ToString(t.inst.PrivateIpAddress), n.IP, zoneID(t.rec.Zone), zoneID(n.Zone), t.rec.Zone, n.Zone, t.rec.SubnetID, subnet)
}

func putRecords(ctx context.Context, lc *localcloud.Cloud, plan *Plan, t *template) error {
	st, _, err := directStore(lc)
	if err != nil {
		return err
	}
	// Each record is the template's item under the node's names, written
	// 25 to a BatchWriteItem: one PutNodeClaim each (a TransactWriteItems
	// with its change item) made moto copy its tables on every write, and
	// 5,000 of them took over 20 minutes and 11 GB. The restore drops the
	// change items anyway (durable).
	items := make([]item, len(plan.Nodes))
	err = parallel(len(plan.Nodes), 4, func(i int) error {
		n := plan.Nodes[i]
		g := plan.Groups[i/groupSize]
		rec, err := cloneJSON[state.NodeClaim](t.rec, replacer(t, n, plan.Subnets[g.Subnet]))
		if err != nil {
			return err
		}
		rec.Group, rec.GroupSize = g.Name, g.Count
		rec.Claim.Pods = nil
		for j := range appPerNode {
			name, _, _ := plan.appPod(i + j*len(plan.Nodes))
			rec.Claim.Pods = append(rec.Claim.Pods, appNS+"/"+name)
		}
		items[i], err = t.item.clone(&rec, replacer(t, n, plan.Subnets[g.Subnet]))
		return err
	})
	if err != nil {
		return err
	}
	if err := putItems(ctx, lc, items); err != nil {
		return err
	}
	// The records read back as written: the item clone kept the shape a
	// Store writes.
	recs, err := st.NodeClaims(ctx)
	if err != nil {
		return fmt.Errorf("read the records back: %w", err)
	}
	have := map[string]bool{}
	for _, rec := range recs {
		have[rec.Name] = rec.Phase == t.rec.Phase && len(rec.Claim.Pods) == appPerNode
	}
	for _, n := range plan.Nodes {
		if !have[n.Claim] {
			return fmt.Errorf("record %s did not read back as written", n.Claim)
		}
	}
	return nil
}

// templateItem is the template record's item as the Store wrote it, and
// which of its attributes holds the record's JSON.
type templateItem struct {
	it   item
	data string
}

// recordItem reads the template record's item straight from moto.
func recordItem(ctx context.Context, lc *localcloud.Cloud, name string) (*templateItem, error) {
	items, err := scanItems(ctx, lc)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		for k, v := range it {
			s, ok := v.(map[string]any)["S"].(string)
			if !ok || !strings.HasPrefix(s, "{") {
				continue
			}
			var rec state.NodeClaim
			if json.Unmarshal([]byte(s), &rec) == nil && rec.Name == name && rec.InstanceID != "" {
				return &templateItem{it: it, data: k}, nil
			}
		}
	}
	return nil, fmt.Errorf("the template record %s is not in the state table", name)
}

// clone is the template's item for rec: its string attributes under the
// node's names, its JSON attribute rec's.
func (t *templateItem) clone(rec *state.NodeClaim, r *strings.Replacer) (item, error) {
	out := item{}
	for k, v := range t.it {
		if s, ok := v.(map[string]any)["S"].(string); ok {
			v = map[string]any{"S": r.Replace(s)}
		}
		out[k] = v
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	out[t.data] = map[string]any{"S": string(b)}
	return out, nil
}

// writeObjects writes the Nodes, NodeClaim objects and pods into etcd.
func writeObjects(ctx context.Context, lc *localcloud.Cloud, plan *Plan, t *template, ds []*appsv1.DaemonSet, rss []*appsv1.ReplicaSet) error {
	w := newEtcdWriter(lc.EtcdURL)
	var kvs []kv
	flush := func(force bool) error {
		if len(kvs) < 4000 && !force {
			return nil
		}
		err := w.writeAll(ctx, kvs, 6)
		kvs = kvs[:0]
		return err
	}
	for i, n := range plan.Nodes {
		r := replacer(t, n, plan.Subnets[plan.Groups[i/groupSize].Subnet])
		node, err := cloneJSON[corev1.Node](t.node, r)
		if err != nil {
			return err
		}
		node.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}
		node.ResourceVersion, node.UID = "", uuid.NewUUID()
		b, err := w.proto(&node)
		if err != nil {
			return err
		}
		kvs = append(kvs, kv{key: "/registry/minions/" + node.Name, value: b})
		obj, err := cloneJSON[map[string]any](t.claimObj, r)
		if err != nil {
			return err
		}
		md := obj["metadata"].(map[string]any)
		delete(md, "resourceVersion")
		delete(md, "managedFields")
		md["uid"] = string(uuid.NewUUID())
		ob, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		kvs = append(kvs, kv{key: "/registry/karpenter.sh/nodeclaims/" + n.Claim, value: ob})
		for j, d := range ds {
			p := clonePod(t.pod, fmt.Sprintf("%s-%s", d.Name, n.Claim[len("default-"):]), dsNS, d.Spec.Template.Labels, ownedBy("DaemonSet", d.Name, d.UID), n, i*dsPerNode+j)
			p.Spec.Containers = d.Spec.Template.Spec.Containers
			p.Spec.Tolerations = d.Spec.Template.Spec.Tolerations
			b, err := w.proto(p)
			if err != nil {
				return err
			}
			kvs = append(kvs, kv{key: "/registry/pods/" + dsNS + "/" + p.Name, value: b})
		}
		if err := flush(false); err != nil {
			return err
		}
	}
	for k := range len(plan.Nodes) * appPerNode {
		name, d, ni := plan.appPod(k)
		rs := rss[d]
		p := clonePod(t.pod, name, appNS, rs.Spec.Template.Labels, ownedBy("ReplicaSet", rs.Name, rs.UID), plan.Nodes[ni], len(plan.Nodes)*dsPerNode+k)
		p.Spec.Containers[0].Image = rs.Spec.Template.Spec.Containers[0].Image
		p.Status.ContainerStatuses[0].Image = p.Spec.Containers[0].Image
		b, err := w.proto(p)
		if err != nil {
			return err
		}
		kvs = append(kvs, kv{key: "/registry/pods/" + appNS + "/" + name, value: b})
		if err := flush(false); err != nil {
			return err
		}
	}
	return flush(true)
}

// clonePod is the template pod as pod ip-th of node n.
func clonePod(tpl *corev1.Pod, name, ns string, labels map[string]string, owner []metav1.OwnerReference, n Node, ip int) *corev1.Pod {
	p := tpl.DeepCopy()
	p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	p.Name, p.Namespace, p.GenerateName = name, ns, ""
	p.UID, p.ResourceVersion, p.ManagedFields = uuid.NewUUID(), "", nil
	p.Labels, p.OwnerReferences = labels, owner
	p.Spec.NodeName = n.Name
	p.Status.HostIP, p.Status.HostIPs = n.IP, []corev1.HostIP{{IP: n.IP}}
	pip := fmt.Sprintf("100.%d.%d.%d", 64+ip>>16, (ip>>8)&255, ip&255)
	p.Status.PodIP, p.Status.PodIPs = pip, []corev1.PodIP{{IP: pip}}
	return p
}

// waitServed waits until the API server lists every node and serves the
// last pod written.
func waitServed(ctx context.Context, kc kubernetes.Interface, plan *Plan) error {
	last, _, _ := plan.appPod(len(plan.Nodes)*appPerNode - 1)
	return harness.Poll(ctx, 5*time.Minute, "the API server to serve the cluster", func() (bool, string, error) {
		nodes, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err.Error(), nil
		}
		if len(nodes.Items) < len(plan.Nodes) {
			return false, fmt.Sprintf("%d nodes", len(nodes.Items)), nil
		}
		if _, err := kc.CoreV1().Pods(appNS).Get(ctx, last, metav1.GetOptions{}); err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
}
