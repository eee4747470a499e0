// Package kube lists the objects a solve reads from the API server: pods,
// nodes and daemonsets. It uses client-go's REST client with a scheme that
// registers only those types, not the typed clientset, because the
// clientset's scheme pulls every API group into the binary (the design
// notes measured a Lambda at 28.6 MB with the clientset and 16.6 MB with a
// REST client like this one), and binary size is cold-start time. Lists
// are paginated and ask for protobuf, the API server's cheapest encoding.
package kube

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// DefaultPageSize is how many objects one list call returns at most.
const DefaultPageSize = 500

// Client lists pods, nodes and daemonsets of every namespace.
type Client struct {
	core, apps rest.Interface
	pageSize   int64
}

// New returns a Client for the API server cfg describes.
func New(cfg *rest.Config) (*Client, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("kube client: %w", err)
		}
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	codecs := serializer.NewCodecFactory(scheme).WithoutConversion()
	client := func(gv schema.GroupVersion, apiPath string) (rest.Interface, error) {
		c := rest.CopyConfig(cfg)
		c.GroupVersion, c.APIPath, c.NegotiatedSerializer = &gv, apiPath, codecs
		c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		c.ContentType = runtime.ContentTypeProtobuf
		if c.UserAgent == "" {
			c.UserAgent = "nodewright"
		}
		rc, err := rest.RESTClientFor(c)
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
	return &Client{core: core, apps: apps, pageSize: DefaultPageSize}, nil
}

// Pods lists the pods of every namespace.
func (c *Client) Pods(ctx context.Context) ([]corev1.Pod, error) {
	var out []corev1.Pod
	err := c.list(ctx, c.core, "pods", func() listObject { return &corev1.PodList{} }, func(l listObject) {
		out = append(out, l.(*corev1.PodList).Items...)
	})
	return out, err
}

// Nodes lists the nodes.
func (c *Client) Nodes(ctx context.Context) ([]corev1.Node, error) {
	var out []corev1.Node
	err := c.list(ctx, c.core, "nodes", func() listObject { return &corev1.NodeList{} }, func(l listObject) {
		out = append(out, l.(*corev1.NodeList).Items...)
	})
	return out, err
}

// DaemonSets lists the daemonsets of every namespace.
func (c *Client) DaemonSets(ctx context.Context) ([]appsv1.DaemonSet, error) {
	var out []appsv1.DaemonSet
	err := c.list(ctx, c.apps, "daemonsets", func() listObject { return &appsv1.DaemonSetList{} }, func(l listObject) {
		out = append(out, l.(*appsv1.DaemonSetList).Items...)
	})
	return out, err
}

// listObject is a typed list (PodList, ...).
type listObject interface {
	runtime.Object
	GetContinue() string
}

// list pages through resource: each page is decoded into a fresh list and
// handed to add. A continue token that expires mid-way (410 Gone) fails the
// list: the caller reads again on its next pass.
func (c *Client) list(ctx context.Context, rc rest.Interface, resource string, newList func() listObject, add func(listObject)) error {
	cont := ""
	for {
		req := rc.Get().Resource(resource).Param("limit", fmt.Sprint(c.pageSize))
		if cont != "" {
			req = req.Param("continue", cont)
		}
		l := newList()
		if err := req.Do(ctx).Into(l); err != nil {
			return fmt.Errorf("list %s: %w", resource, err)
		}
		add(l)
		if cont = l.GetContinue(); cont == "" {
			return nil
		}
	}
}
