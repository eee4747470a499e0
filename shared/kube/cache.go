package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/nodewright/nodewright/shared/apis"
)

// CacheOptions tune a Cache; the zero value is what the functions use.
type CacheOptions struct {
	// WatchSeconds is the server-side timeout of each catch-up watch
	// (default 3). The API server sends a bookmark two seconds before a
	// watch's timeout, so 3 makes a quiet resource's bookmark come about a
	// second after the watch opens.
	WatchSeconds int
	// CatchUpTimeout bounds one resource's catch-up by watch; past it the
	// resource is listed again (default 10s).
	CatchUpTimeout time.Duration
	// RequestTimeout bounds each list page and the barrier read (default 30s).
	RequestTimeout time.Duration
	// IdleReset: when a Sync comes this long after the previous one ended,
	// pooled connections are closed first, since a Lambda container frozen
	// between invocations may thaw with connections the server has long
	// closed (default 10s).
	IdleReset time.Duration
	// PageSize is how many objects one list page holds (default 1,000: a
	// 150,000-pod list in 150 requests, inside the burst of the functions'
	// client rate limit (eksauth.DefaultBurst, 300) where pages of 500
	// would go past it; two pages, a few MB of protobuf, are held at
	// most).
	PageSize int
	// ListBelow: a resource with fewer objects than this is listed on every
	// Sync rather than watched (default 1,000): listing it costs a few tens
	// of milliseconds and needs no wait for a bookmark.
	ListBelow int
	// HintGrace: in a Sync after Expect, once the hinted pods are in, a
	// catch-up short of its barrier ends this long after the Sync began at
	// the earliest (default 50ms; see Expect).
	HintGrace time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Log receives a line per Sync (default slog.Default()).
	Log *slog.Logger
}

func (o *CacheOptions) defaults() {
	if o.WatchSeconds <= 0 {
		o.WatchSeconds = 3
	}
	if o.CatchUpTimeout <= 0 {
		o.CatchUpTimeout = 10 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	if o.IdleReset <= 0 {
		o.IdleReset = 10 * time.Second
	}
	if o.PageSize <= 0 {
		o.PageSize = cachePageSize
	}
	if o.ListBelow == 0 {
		o.ListBelow = 1000
	}
	if o.HintGrace <= 0 {
		o.HintGrace = 50 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
}

// Cache is a snapshot of the cluster kept across invocations of a warm Lambda
// container: pods (trimmed by TrimPod), nodes, daemonsets,
// PodDisruptionBudgets (policy/v1), the volume objects that pin pods to
// zones (PersistentVolumeClaims, PersistentVolumes and StorageClasses,
// trimmed to what volume topology reads), and Karpenter's NodePools and
// EC2NodeClasses when their CRDs are installed. Each Sync brings it up to
// date and returns a View.
//
// How Sync is caught up (a pod that existed when Sync started is in the
// View it returns). The API server's resourceVersions are etcd revisions,
// which grow with every write, and a watch delivers one resource's changes
// in revision order. For each resource Sync either lists it (a cold start, a
// resource of fewer than ListBelow objects, a 410 Gone, a resourceVersion
// that is not a number) or catches up by watch:
//
//  1. barrier: a consistent (quorum) LIST of at most one object (for pods,
//     of the kube-node-lease namespace, which is cheap at any cluster size)
//     gives the cluster's current revision B. Every change committed before
//     Sync started has a revision at most B. (The read also makes the API
//     server's watch cache of the resource catch up with etcd.)
//  2. WATCH from the revision the cache last saw, with allowWatchBookmarks,
//     applying ADDED, MODIFIED and DELETED events, until an event (a change,
//     or a bookmark, which carries the revision the server has reached) at or
//     past B arrives: no change at or before B can come after it, so the
//     store now holds every object that existed at B.
//
// A list is caught up by construction: it is one consistent snapshot read
// after Sync started. A busy resource passes its barrier with its first
// change after it (milliseconds). A quiet one has no such change: it waits
// for the bookmark the API server sends two seconds before a watch's timeout
// (WatchSeconds 3: about one to two seconds, the server's bookmark cadence).
// A watch that ends before the barrier is reopened from the last revision;
// one still short of it after CatchUpTimeout, or answered 410 Gone (the
// revision left the server's watch cache, as after a long freeze), falls
// back to a list. Nothing of a watch outlives its Sync: a Lambda container is
// frozen between invocations and an open connection may be dead on thaw, so
// every Sync opens fresh watches, and a Sync that comes more than IdleReset
// after the previous one first closes pooled connections.
//
// When the invocation's trigger names pods (Expect), a Sync need not wait
// for a bookmark: once the hinted pods' changes are in, catch-ups short of
// their barrier end with a consistent prefix of the cluster's history (see
// Expect for exactly what is then up to date).
//
// A cold list is decoded one object at a time from each page's protobuf,
// through a wire filter that skips what the trim drops (wire.go), while
// the next page is fetched (stream.go): no page is held decoded, no
// untrimmed object is kept.
//
// StorageClasses, NodePools and EC2NodeClasses (tens of objects) are
// listed on every Sync (StorageClasses as JSON into storagev1.StorageClass);
// they are decoded, defaulted and validated by package apis, and an invalid
// object is reported in View.Invalid by name and field path, not as an error.
//
// A Cache is safe for concurrent use; Syncs are serialized.
type Cache struct {
	c    *Client
	opts CacheOptions

	mu       sync.Mutex
	pods     *store[corev1.Pod]
	nodes    *store[corev1.Node]
	ds       *store[appsv1.DaemonSet]
	pdbs     *store[policyv1.PodDisruptionBudget]
	pvcs     *store[corev1.PersistentVolumeClaim]
	pvs      *store[corev1.PersistentVolume]
	hints    *hintState // the current Expect's; nil without
	lastSync time.Time
}

const cachePageSize = 1000

// NewCache returns an empty Cache: the first Sync lists everything.
func NewCache(c *Client, opts CacheOptions) *Cache {
	opts.defaults()
	cache := &Cache{
		c: c, opts: opts,
		pods: newStore(c, c.core, "pods", func() listObject { return &corev1.PodList{} },
			func(l listObject) []corev1.Pod { return l.(*corev1.PodList).Items }, TrimPod),
		nodes: newStore(c, c.core, "nodes", func() listObject { return &corev1.NodeList{} },
			func(l listObject) []corev1.Node { return l.(*corev1.NodeList).Items }, TrimNode),
		ds: newStore(c, c.apps, "daemonsets", func() listObject { return &appsv1.DaemonSetList{} },
			func(l listObject) []appsv1.DaemonSet { return l.(*appsv1.DaemonSetList).Items }, TrimDaemonSet),
		pdbs: newStore(c, c.policy, "poddisruptionbudgets", func() listObject { return &policyv1.PodDisruptionBudgetList{} },
			func(l listObject) []policyv1.PodDisruptionBudget { return l.(*policyv1.PodDisruptionBudgetList).Items }, TrimPDB),
		pvcs: newStore(c, c.core, "persistentvolumeclaims", func() listObject { return &corev1.PersistentVolumeClaimList{} },
			func(l listObject) []corev1.PersistentVolumeClaim { return l.(*corev1.PersistentVolumeClaimList).Items }, TrimPersistentVolumeClaim),
		pvs: newStore(c, c.core, "persistentvolumes", func() listObject { return &corev1.PersistentVolumeList{} },
			func(l listObject) []corev1.PersistentVolume { return l.(*corev1.PersistentVolumeList).Items }, TrimPersistentVolume),
	}
	cache.pods.filter, cache.nodes.filter = podFilter, nodeFilter
	cache.pods.sharer = func() func(*corev1.Pod, []byte) { return newPodInterner().share }
	return cache
}

// View is the cluster as of one Sync. Its objects and slices are shared with
// the Cache and with other Views: treat them as read-only (DeepCopy an
// object, copy a slice, before changing or re-sorting it). A View stays as
// it was when later Syncs change the cache. Slices are sorted by namespace,
// then name.
type View struct {
	// ResourceVersion is the barrier: every change to the cluster up to it
	// is in the View.
	ResourceVersion string
	Pods            []*corev1.Pod
	Nodes           []*corev1.Node
	DaemonSets      []*appsv1.DaemonSet
	PDBs            []*policyv1.PodDisruptionBudget
	// PersistentVolumeClaims, PersistentVolumes and StorageClasses are the
	// volume objects, trimmed (TrimPersistentVolumeClaim, ...).
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*storagev1.StorageClass
	// KarpenterCRDs says whether the cluster serves NodePools (karpenter.sh/v1);
	// NodePools and NodeClasses are the valid ones, defaulted.
	KarpenterCRDs bool
	NodePools     []*apis.NodePool
	NodeClasses   []*apis.EC2NodeClass
	// NodeOverlays are the valid NodeOverlays (karpenter.sh/v1alpha1),
	// when the cluster serves them.
	NodeOverlays []*apis.NodeOverlay
	// KarpenterLeases are Karpenter's leader-election Leases
	// (handover.Running says whether its controller runs);
	// KarpenterUnknown is set when the cluster role may not list Leases.
	KarpenterLeases  []coordinationv1.Lease
	KarpenterUnknown bool
	// Invalid lists the NodePools and EC2NodeClasses that failed to decode or
	// validate ("cluster: NodePool bad: spec.weight: 0 is out of range 1..100"),
	// as apis.Errors; nil when all are valid.
	Invalid error
	// Stats says how each resource was brought up to date.
	Stats SyncStats

	podsByNode map[string][]*corev1.Pod
}

// SyncStats describe one Sync.
type SyncStats struct {
	Duration  time.Duration
	Resources map[string]ResourceStats
}

// ResourceStats describe how one resource was brought up to date.
type ResourceStats struct {
	// Mode is "list" or "watch".
	Mode string
	// Events is how many watch events were applied (bookmarks included).
	Events int
	// Objects is how many objects the cache holds after the Sync.
	Objects  int
	Duration time.Duration
	// Reason says why a resource was listed: "cold", "gone" (410),
	// "timeout", "opaque resourceVersion".
	Reason string
	// Hinted: the catch-up ended short of its barrier, the hinted pods
	// being in (see Expect).
	Hinted bool
}

// PodsOnNode returns the pods bound to the node, sorted by namespace and name.
func (v *View) PodsOnNode(node string) []*corev1.Pod { return v.podsByNode[node] }

// Sync brings the cache up to date and returns the cluster as of the start
// of the call (see Cache).
func (c *Cache) Sync(ctx context.Context) (*View, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := c.opts.Now()
	if !c.lastSync.IsZero() && start.Sub(c.lastSync) > c.opts.IdleReset {
		c.c.CloseIdleConnections()
	}
	v := &View{Stats: SyncStats{Resources: map[string]ResourceStats{}}}
	c.pods.hints = c.hints
	early, stop := c.hints.early(start, c.opts.HintGrace, c.opts.Now)
	defer stop()
	var wg sync.WaitGroup
	var mu sync.Mutex
	stores := []syncer{c.pods, c.nodes, c.ds, c.pdbs, c.pvcs, c.pvs}
	errs := make([]error, len(stores)+3)
	for i, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := s.sync(ctx, c.opts, early)
			errs[i] = err
			mu.Lock()
			v.Stats.Resources[s.resource()] = st
			mu.Unlock()
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs[len(stores)] = c.karpenter(ctx, v)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		v.StorageClasses, errs[len(stores)+1] = c.c.StorageClasses(ctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		var readable bool
		v.KarpenterLeases, readable, errs[len(stores)+2] = c.c.KarpenterLeases(ctx)
		v.KarpenterUnknown = !readable
	}()
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("sync cluster: %w", err)
	}
	v.ResourceVersion = c.pods.rv
	v.Pods, v.Nodes, v.DaemonSets, v.PDBs = c.pods.sorted(), c.nodes.sorted(), c.ds.sorted(), c.pdbs.sorted()
	v.PersistentVolumeClaims, v.PersistentVolumes = c.pvcs.sorted(), c.pvs.sorted()
	v.podsByNode = map[string][]*corev1.Pod{}
	for _, p := range v.Pods {
		if p.Spec.NodeName != "" {
			v.podsByNode[p.Spec.NodeName] = append(v.podsByNode[p.Spec.NodeName], p)
		}
	}
	c.lastSync = c.opts.Now()
	v.Stats.Duration = c.lastSync.Sub(start)
	attrs := []any{"resourceVersion", v.ResourceVersion, "took", v.Stats.Duration.String(), "pods", len(v.Pods), "nodes", len(v.Nodes)}
	for _, name := range []string{"pods", "nodes", "daemonsets", "poddisruptionbudgets", "persistentvolumeclaims", "persistentvolumes"} {
		st := v.Stats.Resources[name]
		mode := st.Mode
		if st.Hinted {
			mode += " (ended on the hinted pods)"
		}
		attrs = append(attrs, name, mode+" "+st.Duration.Round(time.Millisecond).String())
	}
	c.opts.Log.Debug("cluster synced", attrs...)
	return v, nil
}

// SyncPods brings only the pods up to date (as Sync does for each
// resource) and returns them, sorted by namespace and name: the cheap look
// the provision function takes while it waits for a burst of pending pods
// to settle (a full Sync also waits on the barriers of nodes, DaemonSets
// and PodDisruptionBudgets, and lists Karpenter's objects).
func (c *Cache) SyncPods(ctx context.Context) ([]*corev1.Pod, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := c.opts.Now()
	if !c.lastSync.IsZero() && start.Sub(c.lastSync) > c.opts.IdleReset {
		c.c.CloseIdleConnections()
	}
	c.pods.hints = c.hints
	early, stop := c.hints.early(start, c.opts.HintGrace, c.opts.Now)
	defer stop()
	if _, err := c.pods.sync(ctx, c.opts, early); err != nil {
		return nil, fmt.Errorf("sync pods: %w", err)
	}
	c.lastSync = c.opts.Now()
	return c.pods.sorted(), nil
}

// syncer is a store of any type.
type syncer interface {
	resource() string
	sync(ctx context.Context, opts CacheOptions, early <-chan struct{}) (ResourceStats, error)
}

// store holds one resource's objects by namespace/name, and the
// resourceVersion it is current to. Objects are replaced, never changed in
// place, so Views taken earlier stay consistent.
type store[T any] struct {
	c       *Client
	rc      rest.Interface
	name    string
	newList func() listObject
	items   func(listObject) []T
	trim    func(*T)
	// filter, when set, drops at the wire level what trim drops (wire.go).
	filter *wireFilter
	// sharer, when set, makes for each list a function that shares the
	// parts of its objects alike in encoding (intern.go).
	sharer func() func(o *T, enc []byte)
	// hints, set on the pods' store, hears of the pods' changes.
	hints *hintState
	// namespaced resources read their barrier in one namespace.
	namespaced bool
	rv         string
	objs       map[string]*T
	// view is objs sorted by key as of the last sorted(), keys its keys;
	// changed are the keys applied since (view nil: rebuild it whole).
	view    []*T
	keys    []string
	changed map[string]struct{}
}

func newStore[T any](c *Client, rc rest.Interface, name string, newList func() listObject, items func(listObject) []T, trim func(*T)) *store[T] {
	return &store[T]{c: c, rc: rc, name: name, newList: newList, items: items, trim: trim, namespaced: !clusterScoped[name]}
}

// clusterScoped are the resources the cache reads that have no namespace.
var clusterScoped = map[string]bool{"nodes": true, "persistentvolumes": true}

func (s *store[T]) resource() string { return s.name }

func metaOf(obj any) metav1.Object { return obj.(metav1.Object) }

func key(m metav1.Object) string {
	if ns := m.GetNamespace(); ns != "" {
		return ns + "/" + m.GetName()
	}
	return m.GetName()
}

func (s *store[T]) sync(ctx context.Context, opts CacheOptions, early <-chan struct{}) (ResourceStats, error) {
	start := opts.Now()
	st := ResourceStats{Mode: "watch"}
	_, numeric := parseRV(s.rv)
	switch {
	case s.objs == nil:
		st.Reason = "cold"
	case len(s.objs) < opts.ListBelow:
		st.Reason = "small"
	case !numeric:
		st.Reason = "opaque resourceVersion"
	default:
		barrier, err := s.barrier(ctx, opts)
		if err != nil {
			return st, err
		}
		events, hinted, reason, err := s.catchUp(ctx, barrier, opts, early)
		st.Events, st.Hinted = events, hinted
		if err != nil {
			return st, err
		}
		st.Reason = reason
	}
	if st.Reason != "" {
		st.Mode = "list"
		if err := s.list(ctx, opts); err != nil {
			s.objs, s.rv, s.view, s.keys, s.changed = nil, "", nil, nil, nil
			return st, err
		}
	}
	st.Objects = len(s.objs)
	st.Duration = opts.Now().Sub(start)
	return st, nil
}

// barrierNamespace is where a namespaced resource's barrier is read: a
// namespace every cluster has and that holds no workload (only node
// Leases), so the list is empty and cheap however many pods the cluster
// runs (an all-namespace list, even of one object, costs the API server
// time in proportion to the resource: 0.35 s at 50,000 pods here).
const barrierNamespace = "kube-node-lease"

// barrier reads the cluster's current revision with a consistent list of
// the resource (of at most one object; for a namespaced resource, of
// barrierNamespace: resourceVersions are cluster-wide). The read also makes
// the API server's watch cache of the resource catch up with etcd, so its
// next bookmark carries a revision at least this one.
func (s *store[T]) barrier(ctx context.Context, opts CacheOptions) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.RequestTimeout)
	defer cancel()
	l := s.newList()
	req := s.rc.Get().Resource(s.name).Param("limit", "1")
	if s.namespaced {
		req = req.Namespace(barrierNamespace)
	}
	if err := req.Do(ctx).Into(l); err != nil {
		return 0, fmt.Errorf("sync %s: read resourceVersion: %w", s.name, err)
	}
	rv, ok := parseRV(l.GetResourceVersion())
	if !ok {
		return 0, fmt.Errorf("sync %s: resourceVersion %q is not a revision", s.name, l.GetResourceVersion())
	}
	return rv, nil
}

// list replaces the store's objects with a fresh list, decoding one object
// at a time from each page's encoding (through the store's wire filter,
// when it has one) and trimming it at once: neither a page's decoded list
// nor an untrimmed object is kept.
func (s *store[T]) list(ctx context.Context, opts CacheOptions) error {
	objs := make(map[string]*T, len(s.objs))
	ctx, cancel := context.WithTimeout(ctx, opts.RequestTimeout*10)
	defer cancel()
	var scratch []byte
	var share func(*T, []byte)
	if s.sharer != nil {
		share = s.sharer()
	}
	rv, err := s.c.streamList(ctx, s.rc, s.name, int64(opts.PageSize), s.newList, func(b []byte) error {
		if s.filter != nil {
			var err error
			if scratch, err = s.filter.apply(scratch[:0], b); err != nil {
				return err
			}
			b = scratch
		}
		o := new(T)
		u, ok := any(o).(interface{ Unmarshal([]byte) error })
		if !ok {
			return fmt.Errorf("%T has no protobuf decoder", o)
		}
		// Unmarshal copies what it keeps: scratch and the page are reused
		// and released.
		if err := u.Unmarshal(b); err != nil {
			return err
		}
		s.trim(o)
		if share != nil {
			share(o, b)
		}
		objs[key(metaOf(o))] = o
		return nil
	}, func(l listObject) error {
		items := s.items(l)
		for i := range items {
			o := &items[i]
			s.trim(o)
			objs[key(metaOf(o))] = o
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.objs, s.rv, s.view, s.keys, s.changed = objs, rv, nil, nil, nil
	if s.hints != nil {
		s.hints.listed()
	}
	return nil
}

// sorted returns the objects sorted by key. A View keeps the slice it was
// given, so a change makes a new one: from the previous one by a merge of
// the changed keys (a warm Sync changes a few of 150,000 pods, and sorting
// them all again took a quarter of a second), or whole when there is none
// or most changed.
func (s *store[T]) sorted() []*T {
	if len(s.objs) == 0 {
		s.view, s.keys, s.changed = nil, nil, nil
		return nil
	}
	if s.view != nil && len(s.changed) == 0 {
		return s.view
	}
	if s.view == nil || len(s.changed) > len(s.objs)/4 {
		keys := slices.Sorted(maps.Keys(s.objs))
		out := make([]*T, len(keys))
		for i, k := range keys {
			out[i] = s.objs[k]
		}
		s.view, s.keys, s.changed = out, keys, nil
		return out
	}
	changed := slices.Sorted(maps.Keys(s.changed))
	out := make([]*T, 0, len(s.objs))
	keys := make([]string, 0, len(s.objs))
	i, j := 0, 0
	for i < len(s.keys) || j < len(changed) {
		if j == len(changed) || (i < len(s.keys) && s.keys[i] < changed[j]) {
			out, keys = append(out, s.view[i]), append(keys, s.keys[i])
			i++
			continue
		}
		k := changed[j]
		j++
		if i < len(s.keys) && s.keys[i] == k {
			i++
		}
		if o, ok := s.objs[k]; ok {
			out, keys = append(out, o), append(keys, k)
		}
	}
	s.view, s.keys, s.changed = out, keys, nil
	return out
}

// parseRV reads an etcd revision; false for anything else.
func parseRV(rv string) (uint64, bool) {
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil
}
