package snapshot

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/refdata"
	"github.com/nodewright/nodewright/shared/scheduling"
)

func podNames(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Namespace + "/" + p.Name
	}
	return out
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestKubectlList(t *testing.T) {
	s, err := Read(Source{Name: "cluster.yaml", Data: readTestdata(t, "cluster.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	checkCluster(t, s)
}

func checkCluster(t *testing.T, s *Snapshot) {
	t.Helper()
	if got, want := podNames(s.Pending), []string{"shop/web-5d8f7c9b4-fghij"}; !reflect.DeepEqual(got, want) {
		t.Errorf("pending %v, want %v (succeeded, deleting and daemonset pods are left out)", got, want)
	}
	if len(s.Nodes) != 2 {
		t.Fatalf("nodes %d, want 2", len(s.Nodes))
	}
	n := s.Nodes[0]
	if n.Node.Name != "ip-10-0-1-5.ec2.internal" || n.InFlight {
		t.Errorf("first node %s inflight %v", n.Node.Name, n.InFlight)
	}
	if got, want := podNames(n.Pods), []string{"kube-system/aws-node-xk2p9", "shop/web-5d8f7c9b4-abcde"}; !reflect.DeepEqual(got, want) {
		t.Errorf("pods on %s: %v, want %v", n.Node.Name, got, want)
	}
	if q := n.Node.Status.Allocatable[corev1.ResourceCPU]; q.MilliValue() != 1930 {
		t.Errorf("allocatable cpu %v", q.String())
	}
	if m := s.Nodes[1]; len(m.Pods) != 0 || len(m.Node.Spec.Taints) != 1 {
		t.Errorf("second node pods %v taints %v", podNames(m.Pods), m.Node.Spec.Taints)
	}
	if len(s.NodePools) != 1 || s.NodePools[0].Name != "default" || len(s.NodePools[0].Spec.Template.Spec.Requirements) != 2 {
		t.Errorf("nodepools %+v", s.NodePools)
	}
	if len(s.NodeClasses) != 1 || s.NodeClasses[0].Spec.Role != "KarpenterNodeRole-shop" {
		t.Errorf("node classes %+v", s.NodeClasses)
	}
	if len(s.DaemonSets) != 1 || s.DaemonSets[0].Name != "aws-node" {
		t.Errorf("daemonsets %+v", s.DaemonSets)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings %v", s.Warnings)
	}
	in := s.Input()
	if len(in.Pods) != 1 || len(in.Nodes) != 2 || len(in.NodePools) != 1 || len(in.NodeClasses) != 1 || len(in.DaemonSets) != 1 {
		t.Errorf("input %+v", in)
	}
}

func TestKubectlListAsJSON(t *testing.T) {
	data, err := yaml.YAMLToJSON(readTestdata(t, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Read(Source{Name: "cluster.json", Data: data})
	if err != nil {
		t.Fatal(err)
	}
	checkCluster(t, s)
}

func TestSeveralSourcesAndMultiDocument(t *testing.T) {
	nodes := `apiVersion: v1
kind: Node
metadata: {name: n1, labels: {topology.kubernetes.io/zone: us-east-1a}}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}}
`
	pods := `apiVersion: v1
kind: Pod
metadata: {name: b, namespace: team}
spec: {nodeName: n1, containers: [{name: c, image: x}]}
---
# a pending pod in the default namespace
apiVersion: v1
kind: Pod
metadata: {name: a}
spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]}
`
	s, err := Read(Source{Name: "pods.yaml", Data: []byte(pods)}, Source{Name: "nodes.yaml", Data: []byte(nodes)})
	if err != nil {
		t.Fatal(err)
	}
	if got := podNames(s.Pending); !reflect.DeepEqual(got, []string{"default/a"}) {
		t.Errorf("pending %v", got)
	}
	if got := podNames(s.Nodes[0].Pods); !reflect.DeepEqual(got, []string{"team/b"}) {
		t.Errorf("bound %v", got)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "no NodePool") {
		t.Errorf("warnings %v", s.Warnings)
	}
}

func TestWorkloadsExpand(t *testing.T) {
	src := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 250m}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-0, labels: {app: web}}
spec: {containers: [{name: c, image: x}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: data}
spec:
  replicas: 2
  selector: {matchLabels: {app: db}}
  serviceName: db
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: x}]}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec:
  selector: {matchLabels: {app: rs}}
  template:
    metadata: {labels: {app: rs}}
    spec: {containers: [{name: c, image: x}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: batch}
spec:
  parallelism: 4
  completions: 3
  template:
    metadata: {labels: {app: batch}}
    spec: {restartPolicy: Never, containers: [{name: c, image: x}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: held}
spec:
  suspend: true
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: x}]}
`
	s, err := Read(Source{Name: "apps.yaml", Data: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"data/db-0", "data/db-1", "default/batch-0", "default/batch-1", "default/batch-2", "default/rs-0", "default/web-0", "default/web-1", "default/web-2"}
	if got := podNames(s.Pending); !reflect.DeepEqual(got, want) {
		t.Fatalf("pending %v, want %v", got, want)
	}
	byName := map[string]*corev1.Pod{}
	for _, p := range s.Pending {
		byName[p.Namespace+"/"+p.Name] = p
	}
	web := byName["default/web-1"]
	if web.Labels["app"] != "web" || web.Labels["pod-template-hash"] == "" || web.OwnerReferences[0].Kind != "ReplicaSet" ||
		web.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 250 {
		t.Errorf("web-1 %+v", web.ObjectMeta)
	}
	if db := byName["data/db-1"]; db.Labels["statefulset.kubernetes.io/pod-name"] != "db-1" || db.Labels["apps.kubernetes.io/pod-index"] != "1" {
		t.Errorf("db-1 labels %v", db.Labels)
	}
	if j := byName["default/batch-0"]; j.Labels["batch.kubernetes.io/job-name"] != "batch" || j.OwnerReferences[0].APIVersion != "batch/v1" {
		t.Errorf("batch-0 %+v", j.ObjectMeta)
	}
}

func TestSharedExamplesLoad(t *testing.T) {
	dir, err := refdata.Examples()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples in %s: %v", dir, err)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			if _, err := ReadFiles(p); err != nil {
				t.Fatal(err)
			}
		})
	}
	inflate, _ := refdata.Example("inflate.yaml")
	s, err := ReadFiles(inflate)
	if err != nil {
		t.Fatal(err)
	}
	if got := podNames(s.Pending); !reflect.DeepEqual(got, []string{"default/inflate-0"}) {
		t.Errorf("inflate pods %v", got)
	}
	gpu, _ := refdata.Example("nodepool-gpu-training.yaml")
	s, err = ReadFiles(gpu)
	if err != nil {
		t.Fatal(err)
	}
	if got := podNames(s.Pending); !reflect.DeepEqual(got, []string{"default/ml-training-job"}) || len(s.NodePools) != 1 {
		t.Errorf("gpu example pods %v pools %d", got, len(s.NodePools))
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], `EC2NodeClass "gpu-class" is not in the snapshot`) {
		t.Errorf("warnings %v", s.Warnings)
	}
}

func TestBadInput(t *testing.T) {
	pod := func(spec string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: web-1, namespace: default}\nspec:\n" + spec
	}
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"malformed quantity", pod("  containers: [{name: c, image: x, resources: {requests: {cpu: 2x}}}]\n"),
			[]string{"pods.yaml: document 1 (Pod default/web-1): spec.containers[0].resources.requests.cpu: quantities must match"}},
		{"malformed extended resource", pod("  containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: lots}}}]\n"),
			[]string{"spec.containers[0].resources.limits[nvidia.com/gpu]: quantities must match"}},
		{"quantity with a huge negative exponent", pod("  containers: [{name: c, image: x, resources: {requests: {cpu: \"1e-999999999\"}}}]\n"),
			[]string{"(Pod default/web-1): spec.containers[0].resources.requests.cpu: \"1e-999999999\" is not a valid quantity: exponent out of range -18..18"}},
		{"overlong quantity", pod("  overhead: {memory: \"1000000000000000000000000000000000000000000000000000000000000000000000Ki\"}\n  containers: [{name: c, image: x}]\n"),
			[]string{"spec.overhead.memory: \"10000000000", "longer than 64 characters"}},
		{"node allocatable with a huge exponent", "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: \"1e-99999\"}}\n",
			[]string{"(Node n1): status.allocatable.cpu: \"1e-99999\" is not a valid quantity"}},
		{"wrong type", pod("  containers: [{name: c, image: x, ports: [{containerPort: eighty}]}]\n"),
			[]string{`(Pod default/web-1): spec.containers[0].ports[0].containerPort: "eighty" is not a valid integer`}},
		{"negative request", pod("  containers: [{name: c, image: x, resources: {requests: {memory: -1Gi}}}]\n"),
			[]string{"spec.containers[0].resources.requests.memory: -1Gi: must be greater than or equal to 0"}},
		{"no containers", pod("  nodeSelector: {a: b}\n"), []string{"spec.containers: required"}},
		{"bad node affinity operator", pod("  containers: [{name: c, image: x}]\n  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Near, values: [b]}]}]}}}\n"),
			[]string{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value"}},
		{"bad spread", pod("  containers: [{name: c, image: x}]\n  topologySpreadConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: Maybe}]\n"),
			[]string{"spec.topologySpreadConstraints[0].maxSkew: 0: must be greater than zero", "spec.topologySpreadConstraints[0].whenUnsatisfiable"}},
		{"bad toleration", pod("  containers: [{name: c, image: x}]\n  tolerations: [{key: a, operator: Exists, value: b}]\n"),
			[]string{"spec.tolerations[0].value: must be empty when operator is Exists"}},
		{"bad label selector", pod("  containers: [{name: c, image: x}]\n  affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, labelSelector: {matchExpressions: [{key: app, operator: Has}]}}]}}\n"),
			[]string{"spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector:"}},
		{"unknown kind", "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {}\n",
			[]string{`pods.yaml: document 1 (Service shop/web): kind: unknown kind "Service"`}},
		{"old apiVersion", "apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata: {name: web}\nspec: {}\n",
			[]string{`(Deployment default/web): apiVersion: "extensions/v1beta1" is not supported for Deployment: use apps/v1`}},
		{"bound to a missing node", pod("  nodeName: ip-10-0-9-9\n  containers: [{name: c, image: x}]\n"),
			[]string{`(Pod default/web-1): spec.nodeName: bound to Node "ip-10-0-9-9", which is not in the snapshot`}},
		{"duplicate pod", pod("  containers: [{name: c, image: x}]\n") + "---\n" + pod("  containers: [{name: c, image: x}]\n"),
			[]string{"pods.yaml: document 2 (Pod default/web-1): metadata.name: duplicate Pod (also in pods.yaml document 1)"}},
		{"duplicate deployment", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {template: {spec: {containers: [{name: c, image: x}]}}}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {template: {spec: {containers: [{name: c, image: x}]}}}\n",
			[]string{"pods.yaml: document 2 (Deployment default/web): metadata.name: duplicate Deployment (also in pods.yaml document 1)"}},
		{"absurd replicas", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 2000000000, template: {spec: {containers: [{name: c, image: x}]}}}\n",
			[]string{"(Deployment default/web): spec.replicas: 2000000000: the snapshot's workloads would add more than 100000 pods"}},
		{"node without allocatable", "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n",
			[]string{"(Node n1): status.allocatable: required"}},
		{"negative replicas", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: -2, selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: x}]}}}\n",
			[]string{"(Deployment default/web): spec.replicas: -2: must be greater than or equal to 0"}},
		{"deployment template quantity", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec: {template: {spec: {containers: [{name: c, image: x, resources: {requests: {memory: 1Gb}}}]}}}\n",
			[]string{"(Deployment shop/web): spec.template.spec.containers[0].resources.requests.memory: quantities must match"}},
		{"invalid nodepool", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec: {weight: 500, template: {spec: {requirements: [{key: karpenter.sh/capacity-type, operator: Near, values: [spot]}], nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}}}\n",
			[]string{"pods.yaml: document 1 (NodePool np): spec.template.spec.requirements[0].operator: \"Near\"", "pods.yaml: document 1 (NodePool np): spec.weight: 500"}},
		{"old karpenter apiVersion", "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: np}\nspec: {}\n",
			[]string{"(NodePool np): apiVersion", "karpenter.sh/v1beta1"}},
		{"nodepool with a foreign node class", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec: {template: {spec: {requirements: [], nodeClassRef: {group: example.com, kind: Other, name: x}}}}\n",
			[]string{`(NodePool np): spec.template.spec.nodeClassRef: group "example.com", kind "Other"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Read(Source{Name: "pods.yaml", Data: []byte(tc.src)})
			if err == nil {
				t.Fatalf("no error; snapshot %+v", s)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
			var e *Error
			var de *apis.DocumentError
			if !errors.As(err, &e) && !errors.As(err, &de) {
				t.Errorf("error %T is neither a *snapshot.Error nor an *apis.DocumentError", err)
			}
			_, again := Read(Source{Name: "pods.yaml", Data: []byte(tc.src)})
			if again.Error() != err.Error() {
				t.Errorf("errors differ between runs:\n%s\n%s", err, again)
			}
		})
	}
}

func TestEveryErrorIsReportedInOrder(t *testing.T) {
	src := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: np}
spec: {weight: 0, template: {spec: {requirements: [], nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}}}
---
apiVersion: v1
kind: Pod
metadata: {name: a}
spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 1x}}}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
---
apiVersion: v1
kind: Pod
metadata: {name: b}
spec: {containers: [{name: c, image: x, resources: {requests: {memory: lots}}}]}
`
	_, err := Read(Source{Name: "x.yaml", Data: []byte(src)})
	var list Errors
	if !errors.As(err, &list) || len(list) != 4 {
		t.Fatalf("want 4 errors, got %v", err)
	}
	for i, want := range []string{"document 1 (NodePool np): spec.weight", "document 2 (Pod default/a)", "document 3 (ConfigMap cm): kind: unknown kind", "document 4 (Pod default/b)"} {
		if !strings.Contains(list[i].Error(), want) {
			t.Errorf("error %d %q does not name %q", i, list[i], want)
		}
	}
}

func TestMissingFile(t *testing.T) {
	_, err := ReadFiles(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("error %v does not name the file", err)
	}
}

func TestTypedList(t *testing.T) {
	src := `{"apiVersion": "v1", "kind": "PodList", "items": [
  {"metadata": {"name": "p1"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
  {"metadata": {"name": "p2"}, "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "x1"}}}]}}
]}`
	_, err := Read(Source{Name: "pods.json", Data: []byte(src)})
	if err == nil || !strings.Contains(err.Error(), "pods.json: document 1 item 2 (Pod default/p2): spec.containers[0].resources.requests.cpu") {
		t.Fatalf("error %v", err)
	}
}

// More pending pods than a plan takes is one clear error (not one per pod);
// bound pods and workloads' pods do not count.
func TestTooManyPendingPods(t *testing.T) {
	var docs []string
	for i := 0; i < 5; i++ {
		docs = append(docs, "apiVersion: v1\nkind: Pod\nmetadata: {name: p"+string(rune('0'+i))+"}\nspec: {containers: [{name: c}]}\n")
	}
	docs = append(docs, "apiVersion: v1\nkind: Pod\nmetadata: {name: bound}\nspec: {nodeName: node-1, containers: [{name: c}]}\n",
		"apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\nstatus: {allocatable: {cpu: '4', memory: 8Gi, pods: '20'}}\n")
	read := func(limit int) (*Snapshot, error) {
		r := newReader()
		r.maxPending = limit
		r.source(Source{Name: "pods.yaml", Data: []byte(strings.Join(docs, "---\n"))})
		return r.finish()
	}
	if s, err := read(5); err != nil || len(s.Pending) != 5 {
		t.Fatalf("at the limit: %v", err)
	}
	_, err := read(3)
	var list Errors
	if !errors.As(err, &list) || len(list) != 1 ||
		!strings.Contains(err.Error(), "pods.yaml: document 4 (Pod default/p3)") ||
		!strings.Contains(err.Error(), "more than 3 pending pods") {
		t.Fatalf("err %v", err)
	}
	if MaxPendingPods != 100_000 {
		t.Fatalf("MaxPendingPods %d: the README quotes 100,000", MaxPendingPods)
	}
}

// TestVolumes: volume objects are read, a StatefulSet's pods get the
// claims of its templates (created from the template when the snapshot
// lacks them), and the plan puts each pod where its volume is: the bound
// volume's zone, the StorageClass's zone for claims still to be provisioned.
func TestVolumes(t *testing.T) {
	src := `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: zonal-b}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
- matchLabelExpressions:
  - {key: topology.ebs.csi.aws.com/zone, values: [us-east-1b]}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-c}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-1}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1c]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  annotations: {pv.kubernetes.io/bind-completed: "yes"}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 10Gi}}
  volumeName: pv-c
---
apiVersion: v1
kind: Pod
metadata: {name: single}
spec:
  containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      storageClassName: zonal-b
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 10Gi}}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec: {template: {spec: {requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}], nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}}}
`
	s, err := Read(Source{Name: "volumes.yaml", Data: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	v := s.Input().Volumes
	if v == nil || len(v.Volumes) != 1 || len(v.StorageClasses) != 1 {
		t.Fatalf("volumes %+v", v)
	}
	var claims []string
	for _, c := range v.Claims {
		claims = append(claims, c.Namespace+"/"+c.Name)
	}
	if want := []string{"default/data", "shop/data-db-0", "shop/data-db-1"}; !reflect.DeepEqual(claims, want) {
		t.Errorf("claims %v, want %v", claims, want)
	}
	for _, p := range s.Pending {
		if p.Namespace == "shop" && (len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-"+p.Name) {
			t.Errorf("%s volumes %+v", p.Name, p.Spec.Volumes)
		}
	}
	in := s.Input()
	in.InstanceTypes, in.Zones = catalog.Default().Types(), []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	res, err := scheduling.Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	zoneOf := map[string][]string{}
	for _, nc := range res.NodeClaims {
		for _, p := range nc.Pods {
			zoneOf[p] = nc.Zones
		}
	}
	for pod, zone := range map[string]string{"default/single": "us-east-1c", "shop/db-0": "us-east-1b", "shop/db-1": "us-east-1b"} {
		if !reflect.DeepEqual(zoneOf[pod], []string{zone}) {
			t.Errorf("%s: zones %v, want [%s] (plan %+v)", pod, zoneOf[pod], zone, res)
		}
	}
	// Without volume objects, volumes restrict nothing and no claim is made.
	s, err = Read(Source{Name: "plain.yaml", Data: []byte(src[strings.Index(src, "kind: Pod\n")-len("apiVersion: v1\n"):])})
	if err != nil {
		t.Fatal(err)
	}
	if s.Volumes != nil {
		t.Errorf("volumes %+v from a snapshot without volume objects", s.Volumes)
	}
}
