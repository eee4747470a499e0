package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/test/harness"
	"github.com/nodewright/nodewright/test/localcloud"
	"github.com/nodewright/nodewright/test/localcloud/awsfront"
)

// Namespaces of the cluster's workloads.
const (
	appNS = "apps"
	dsNS  = "kube-system"
)

var nodeClaimGVR = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}

// Group is one fleet of identical instances (one RunInstances call).
type Group struct {
	Name    string            `json:"name"`
	Type    string            `json:"type"`
	Count   int               `json:"count"`
	Subnet  int               `json:"subnet"` // index into the seeded subnets
	Spot    bool              `json:"spot"`
	ImageID string            `json:"imageId"`
	Tags    map[string]string `json:"tags"`
}

// Node is one node of the built cluster.
type Node struct {
	Name     string `json:"name"`
	Claim    string `json:"claim"`
	Instance string `json:"instance"`
	Zone     string `json:"zone"`
	IP       string `json:"ip"`
	Spot     bool   `json:"spot"`
}

// Plan is what a snapshot keeps beside etcd's data and the items: how to
// launch the instances again, and the cluster's nodes.
type Plan struct {
	Version int    `json:"version"`
	Size    Size   `json:"size"`
	Built   string `json:"built"`
	// Seeded are the build's seeded IDs (subnets in zone order, the
	// security group, the VPC), replaced by the restore's in the items.
	Subnets       []string `json:"subnets"`
	SecurityGroup string   `json:"securityGroup"`
	VPC           string   `json:"vpc"`
	Groups        []Group  `json:"groups"`
	// TemplateSubnet is the subnet the template instance took an address
	// of (moto hands addresses out in order: a restore takes it first).
	TemplateSubnet int      `json:"templateSubnet"`
	Nodes          []Node   `json:"nodes"`
	Deployments    []string `json:"deployments"`
	// Build figures.
	BuildSeconds   float64 `json:"buildSeconds"`
	PodsPerSecond  float64 `json:"podsPerSecond"`
	APIPodsPerSec  float64 `json:"apiPodsPerSecond"`
	RecordsPerSec  float64 `json:"recordsPerSecond"`
	InstancesPerSc float64 `json:"instancesPerSecond"`
}

// appPod is the name and node of app pod k (28 a node, from the
// Deployments in turn).
func (p *Plan) appPod(k int) (name string, deployment int, node int) {
	n := len(p.Nodes)
	d := k / perDeployment
	return fmt.Sprintf("%s-%05d", rsName(d), k), d, k % n
}

func deploymentName(d int) string { return fmt.Sprintf("svc-%03d", d) }
func rsName(d int) string         { return deploymentName(d) + "-7c9d5b8f4" }

// template is what the builder copies: one NodeClaim the provision
// function launched for 28 pods, its record, Node, NodeClaim object,
// instance and one of its pods.
type template struct {
	rec      *state.NodeClaim
	node     *corev1.Node
	claimObj map[string]any
	inst     ec2types.Instance
	pod      *corev1.Pod
	// item is its record's item as the Store wrote it (the records are
	// cloned from it).
	item *templateItem
}

// kubeFor is an admin client with the rate limits off, speaking protobuf.
func kubeFor(lc *localcloud.Cloud) (kubernetes.Interface, dynamic.Interface, error) {
	cfg := *lc.REST
	cfg.QPS, cfg.Burst = 5000, 10000
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	kc, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		return nil, nil, err
	}
	dc, err := dynamic.NewForConfig(lc.REST)
	return kc, dc, err
}

func directEC2(lc *localcloud.Cloud) *ec2.Client {
	return ec2.NewFromConfig(awsfront.DirectConfig(lc.MotoURL, lc.Options.Region))
}

func directStore(lc *localcloud.Cloud) (*state.Store, *dynamodb.Client, error) {
	db := dynamodb.NewFromConfig(awsfront.DirectConfig(lc.MotoURL, lc.Options.Region))
	st, err := state.New(db, lc.Names.Table, lc.Cluster.Name, time.Now)
	return st, db, err
}

func appRequests() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")}
}

func dsRequests() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
}

func podSpec(req corev1.ResourceList, image string) corev1.PodSpec {
	grace := int64(30)
	return corev1.PodSpec{
		TerminationGracePeriodSeconds: &grace,
		Containers: []corev1.Container{{Name: "app", Image: image,
			Env:       []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "PORT", Value: "8080"}},
			Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			Resources: corev1.ResourceRequirements{Requests: req, Limits: corev1.ResourceList{corev1.ResourceMemory: req[corev1.ResourceMemory]}}}},
	}
}

// workloads creates the DaemonSets, Deployments and ReplicaSets (their
// controllers are off: the objects own the pods the builder writes).
func workloads(ctx context.Context, kc kubernetes.Interface, nDeploy int) (ds []*appsv1.DaemonSet, rs []*appsv1.ReplicaSet, err error) {
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNS}}, metav1.CreateOptions{}); err != nil {
		return nil, nil, err
	}
	for _, name := range []string{"kube-proxy", "aws-node"} {
		lbl := map[string]string{"k8s-app": name}
		spec := podSpec(dsRequests(), "public.ecr.aws/eks/"+name+":v1")
		spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		d, err := kc.AppsV1().DaemonSets(dsNS).Create(ctx, &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: dsNS, Labels: lbl},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: lbl},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: spec}},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("daemonset %s: %w", name, err)
		}
		ds = append(ds, d)
	}
	for d := range nDeploy {
		name := deploymentName(d)
		lbl := map[string]string{"app": name, "team": fmt.Sprintf("team-%d", d%7)}
		replicas := int32(perDeployment)
		tpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: podSpec(appRequests(), "registry.example.com/"+name+":v1.4.2")}
		dep, err := kc.AppsV1().Deployments(appNS).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: appNS, Labels: lbl},
			Spec:       appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: lbl}, Template: tpl},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("deployment %s: %w", name, err)
		}
		rsLbl := map[string]string{"app": name, "team": lbl["team"], "pod-template-hash": "7c9d5b8f4"}
		tpl.Labels = rsLbl
		r, err := kc.AppsV1().ReplicaSets(appNS).Create(ctx, &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: rsName(d), Namespace: appNS, Labels: rsLbl, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: dep.UID, Controller: aws.Bool(true), BlockOwnerDeletion: aws.Bool(true)}}},
			Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: rsLbl}, Template: tpl},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("replicaset %s: %w", name, err)
		}
		rs = append(rs, r)
	}
	return ds, rs, nil
}

func ownedBy(kind, name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: aws.Bool(true), BlockOwnerDeletion: aws.Bool(true)}}
}

// launchTemplate has the provision function launch one NodeClaim for 28
// pending pods of the first ReplicaSet, registers its Node and sweeps
// until its record is initialized and its NodeClaim object written.
func launchTemplate(ctx context.Context, lc *localcloud.Cloud, h *harness.Harness, kc kubernetes.Interface, dc dynamic.Interface, rs *appsv1.ReplicaSet, log *slog.Logger) (*template, error) {
	if err := harness.Poll(ctx, time.Minute, "default ServiceAccount in "+appNS, func() (bool, string, error) {
		_, err := kc.CoreV1().ServiceAccounts(appNS).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err), nil
	}); err != nil {
		return nil, err
	}
	for j := range appPerNode {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("template-%02d", j), Namespace: appNS, Labels: rs.Spec.Template.Labels,
			OwnerReferences: ownedBy("ReplicaSet", rs.Name, rs.UID)}, Spec: *rs.Spec.Template.Spec.DeepCopy()}
		if _, err := kc.CoreV1().Pods(appNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("template pod: %w", err)
		}
	}
	app := rs.Spec.Template.Labels["app"]
	if err := harness.WaitUnschedulable(ctx, lc, appNS, app, appPerNode, 2*time.Minute); err != nil {
		return nil, err
	}
	st, _, err := directStore(lc)
	if err != nil {
		return nil, err
	}
	var t template
	err = harness.Poll(ctx, 90*time.Second, "the template NodeClaim initialized, its pods Running", func() (bool, string, error) {
		if err := h.Sweep(ctx); err != nil {
			return false, "", err
		}
		if err := lc.RegisterNodes(ctx); err != nil {
			return false, "", err
		}
		recs, err := st.NodeClaims(ctx)
		if err != nil {
			return false, "", err
		}
		if len(recs) != 1 {
			return false, fmt.Sprintf("%d records", len(recs)), nil
		}
		t.rec = recs[0]
		if t.rec.Phase != state.Initialized {
			n, err := kc.CoreV1().Nodes().Get(ctx, t.rec.NodeName, metav1.GetOptions{})
			if err != nil {
				return false, "record " + string(t.rec.Phase) + ": " + err.Error(), nil
			}
			return false, fmt.Sprintf("record %s: node taints %v conditions %v", t.rec.Phase, n.Spec.Taints, n.Status.Conditions), nil
		}
		u, err := dc.Resource(nodeClaimGVR).Get(ctx, t.rec.Name, metav1.GetOptions{})
		if err != nil {
			return false, "NodeClaim object: " + err.Error(), nil
		}
		t.claimObj = u.Object
		c, err := harness.Count(ctx, lc, appNS, app)
		if err != nil {
			return false, "", err
		}
		return c.Running == appPerNode, c.String(), nil
	})
	if err != nil {
		return nil, err
	}
	if t.node, err = kc.CoreV1().Nodes().Get(ctx, t.rec.NodeName, metav1.GetOptions{}); err != nil {
		return nil, err
	}
	pods, err := harness.Pods(ctx, lc, appNS, app)
	if err != nil {
		return nil, err
	}
	t.pod = pods[0].DeepCopy()
	out, err := directEC2(lc).DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{t.rec.InstanceID}})
	if err != nil || len(out.Reservations) == 0 || len(out.Reservations[0].Instances) == 0 {
		return nil, fmt.Errorf("template instance %s: %v", t.rec.InstanceID, err)
	}
	t.inst = out.Reservations[0].Instances[0]
	log.Info("template NodeClaim", "name", t.rec.Name, "type", t.rec.InstanceType, "capacity", t.rec.CapacityType, "zone", t.rec.Zone)
	// The template leaves: its record, Node, NodeClaim object, pods and
	// instance (its ID is random: the restore could not launch it again).
	w := newEtcdWriter(lc.EtcdURL)
	del := []kv{{key: "/registry/minions/" + t.node.Name}, {key: "/registry/karpenter.sh/nodeclaims/" + t.rec.Name}}
	for _, p := range pods {
		del = append(del, kv{key: "/registry/pods/" + appNS + "/" + p.Name})
	}
	if err := w.txn(ctx, del); err != nil {
		return nil, err
	}
	if t.item, err = recordItem(ctx, lc, t.rec.Name); err != nil {
		return nil, err
	}
	if err := st.DeleteNodeClaim(ctx, t.rec); err != nil {
		return nil, err
	}
	if _, err := directEC2(lc).TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{t.rec.InstanceID}}); err != nil {
		return nil, err
	}
	return &t, nil
}

// launchGroups launches the groups' instances in order (after moto is
// seeded, so the same order gives the same IDs), returns them in order.
func launchGroups(ctx context.Context, lc *localcloud.Cloud, groups []Group, subnets []string, sg string) ([]ec2types.Instance, error) {
	e := directEC2(lc)
	var out []ec2types.Instance
	for _, g := range groups {
		var tags []ec2types.Tag
		keys := make([]string, 0, len(g.Tags))
		for k := range g.Tags {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			tags = append(tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(g.Tags[k])})
		}
		in := &ec2.RunInstancesInput{
			ImageId: aws.String(g.ImageID), InstanceType: ec2types.InstanceType(g.Type),
			MinCount: aws.Int32(int32(g.Count)), MaxCount: aws.Int32(int32(g.Count)),
			SubnetId: aws.String(subnets[g.Subnet]), SecurityGroupIds: []string{sg},
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: tags}},
		}
		if g.Spot {
			in.InstanceMarketOptions = &ec2types.InstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeSpot}
		}
		r, err := e.RunInstances(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("launch group %s: %w", g.Name, err)
		}
		if len(r.Instances) != g.Count {
			return nil, fmt.Errorf("launch group %s: %d instances, want %d", g.Name, len(r.Instances), g.Count)
		}
		out = append(out, r.Instances...)
	}
	return out, nil
}

// zoneID is the local cloud's zone ID of a zone (us-east-1a: use1-az1).
func zoneID(zone string) string {
	parts := strings.Split(zone[:len(zone)-1], "-")
	if len(parts) != 3 || parts[1] == "" {
		return ""
	}
	return fmt.Sprintf("%s%c%s-az%d", parts[0], parts[1][0], parts[2], int(zone[len(zone)-1]-'a')+1)
}

// cloneJSON copies v through JSON with the replacer applied to the text.
func cloneJSON[T any](v any, r *strings.Replacer) (T, error) {
	var out T
	b, err := json.Marshal(v)
	if err != nil {
		return out, err
	}
	err = json.Unmarshal([]byte(r.Replace(string(b))), &out)
	return out, err
}

// parallel runs f(i) for i in [0, n) on workers goroutines.
func parallel(n, workers int, f func(i int) error) error {
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

var _ = names.TagKeyNodeClaim
