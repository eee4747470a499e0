// Package kube is Nodewright's access to the Kubernetes API server: the reads a
// solve, a drain and consolidation need (a Cache kept in the warm Lambda
// container and brought up to date with a WATCH on each call), and the writes
// the functions make (node taints, cordon, finalizers and labels; pod
// eviction and deletion; Kubernetes Events).
//
// It uses client-go's REST client with a scheme that registers only the types
// it reads and writes (core/v1, apps/v1, policy/v1), not the typed clientset,
// because the clientset's scheme pulls every API group into the binary (the
// design notes measured a Lambda at 28.6 MB with the clientset and 16.6 MB
// with a REST client like this one), and binary size is cold-start time.
// Requests ask for protobuf, the API server's cheapest encoding; Karpenter's
// custom resources (which have no protobuf form) come back as JSON and are
// read and validated by package apis.
//
// The API:
//
//	c, err := kube.New(restConfig)          // restConfig from eksauth.Provider.RESTConfig, or kubeconfig.Load
//	cache := kube.NewCache(c, kube.CacheOptions{}) // keep it in a package-level variable of main: it lives with the container
//	cache.Expect(hints)                    // the pods the trigger names (nil: none): Syncs need not wait for a bookmark
//	view, err := cache.Sync(ctx)           // pods (trimmed), nodes, daemonsets, PDBs, volume objects, NodePools, EC2NodeClasses
//	pods := view.PodsOnNode(name)
//	changed, err := c.Taint(ctx, node, taint) // Untaint, Cordon, AddFinalizer, RemoveFinalizer, Label, GetNode, DeleteNode
//	err = c.Evict(ctx, ns, pod, kube.EvictOptions{Timeout: 10 * time.Second}) // errors.Is(err, kube.ErrBlockedByPDB)
//	err = c.DeletePod(ctx, ns, pod, kube.DeleteOptions{UID: uid})
//	rec := kube.NewRecorder(c, kube.RecorderOptions{Instance: "provision"})
//	err = rec.Eventf(ctx, kube.RefForPod(pod), corev1.EventTypeNormal, "Nominated", "Nominated to NodeClaim %s", name)
//
// Client.Pods, Nodes and DaemonSets list those kinds untrimmed and without a
// cache, for one-shot readers such as `make run`; Client.PodsOnNode is the
// drain's consistent read of one node's pods. Package drain builds on the
// writes, package eksauth makes the rest.Config on AWS.
package kube

import (
	"context"
	"fmt"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// DefaultPageSize is how many objects one list call returns at most.
const DefaultPageSize = 500

// Component is the reporting component of Nodewright's Kubernetes Events and
// the default user agent.
const Component = "nodewright"

// Client reads and writes the objects Nodewright uses. It is safe for
// concurrent use.
type Client struct {
	http               *http.Client
	core, apps, policy rest.Interface
	codec              runtime.Codec // JSON encoder for request bodies
	pageSize           int64
}

// New returns a Client for the API server cfg describes. cfg is copied; its
// QPS and Burst apply to the client's requests (client-go's defaults of 5 and
// 10 when zero: callers that drain nodes should raise them).
func New(cfg *rest.Config) (*Client, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("kube client: %w", err)
		}
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	codecs := serializer.NewCodecFactory(scheme).WithoutConversion()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube client: %w", err)
	}
	client := func(gv schema.GroupVersion, apiPath string) (rest.Interface, error) {
		c := rest.CopyConfig(cfg)
		c.GroupVersion, c.APIPath, c.NegotiatedSerializer = &gv, apiPath, codecs
		c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		c.ContentType = runtime.ContentTypeProtobuf
		if c.UserAgent == "" {
			c.UserAgent = Component
		}
		rc, err := rest.RESTClientForConfigAndClient(c, hc)
		if err != nil {
			return nil, fmt.Errorf("kube client %s: %w", gv, err)
		}
		return rc, nil
	}
	core, err := client(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	apps, err := client(appsv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	policy, err := client(policyv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		return nil, fmt.Errorf("kube client: no JSON serializer")
	}
	return &Client{http: hc, core: core, apps: apps, policy: policy, codec: info.Serializer, pageSize: DefaultPageSize}, nil
}

// CloseIdleConnections closes pooled connections, so the next request dials
// afresh (a Lambda container thawed after a long freeze may hold connections
// the server has closed).
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// Pods lists the pods of every namespace (untrimmed).
func (c *Client) Pods(ctx context.Context) ([]corev1.Pod, error) {
	var out []corev1.Pod
	_, err := c.list(ctx, c.core, "pods", "", func() listObject { return &corev1.PodList{} }, func(l listObject) {
		out = append(out, l.(*corev1.PodList).Items...)
	})
	return out, err
}

// Nodes lists the nodes.
func (c *Client) Nodes(ctx context.Context) ([]corev1.Node, error) {
	var out []corev1.Node
	_, err := c.list(ctx, c.core, "nodes", "", func() listObject { return &corev1.NodeList{} }, func(l listObject) {
		out = append(out, l.(*corev1.NodeList).Items...)
	})
	return out, err
}

// DaemonSets lists the daemonsets of every namespace.
func (c *Client) DaemonSets(ctx context.Context) ([]appsv1.DaemonSet, error) {
	var out []appsv1.DaemonSet
	_, err := c.list(ctx, c.apps, "daemonsets", "", func() listObject { return &appsv1.DaemonSetList{} }, func(l listObject) {
		out = append(out, l.(*appsv1.DaemonSetList).Items...)
	})
	return out, err
}

// listObject is a typed list (PodList, ...).
type listObject interface {
	runtime.Object
	GetContinue() string
	GetResourceVersion() string
}

// list pages through resource (of every namespace; fieldSelector may be
// empty): each page is decoded into a fresh list and handed to add, so a
// caller that keeps only part of each object never holds the whole list.
// It returns the list's resourceVersion (the first page's: pages of one list
// are one consistent snapshot). A continue token that expires mid-way (410
// Gone) fails the list: the caller reads again.
func (c *Client) list(ctx context.Context, rc rest.Interface, resource, fieldSelector string, newList func() listObject, add func(listObject)) (string, error) {
	return c.listPaged(ctx, rc, resource, fieldSelector, c.pageSize, newList, add)
}

func (c *Client) listPaged(ctx context.Context, rc rest.Interface, resource, fieldSelector string, pageSize int64, newList func() listObject, add func(listObject)) (string, error) {
	cont, rv := "", ""
	for {
		req := rc.Get().Resource(resource).Param("limit", fmt.Sprint(pageSize))
		if fieldSelector != "" {
			req = req.Param("fieldSelector", fieldSelector)
		}
		if cont != "" {
			req = req.Param("continue", cont)
		}
		l := newList()
		if err := req.Do(ctx).Into(l); err != nil {
			return "", fmt.Errorf("list %s: %w", resource, err)
		}
		if rv == "" {
			rv = l.GetResourceVersion()
		}
		add(l)
		if cont = l.GetContinue(); cont == "" {
			return rv, nil
		}
	}
}
