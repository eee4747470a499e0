package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/shared/nodeclaim"
)

// ObjectRef names the object an Event is about.
type ObjectRef struct {
	APIVersion, Kind, Namespace, Name string
	UID                               types.UID
}

// RefForPod is the reference of a pod.
func RefForPod(p *corev1.Pod) ObjectRef {
	return ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID}
}

// RefForNode is the reference of a node.
func RefForNode(n *corev1.Node) ObjectRef {
	return ObjectRef{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}
}

// RecorderOptions tune a Recorder; the zero value is usable.
type RecorderOptions struct {
	// Instance is the reporting instance (the function's name, say).
	Instance string
	// Burst and Refill are each object's token bucket, as client-go's
	// recorder limits them: 25 events at once, then one per 5 minutes.
	Burst  int
	Refill time.Duration
	// Timeout bounds each write (default 5s).
	Timeout time.Duration
	Now     func() time.Time
	Log     *slog.Logger
}

// Recorder writes Kubernetes Events (core/v1) with the reporting component
// "nodewright". Events are aggregated: an event with the same object, type,
// reason and message as an earlier one increments that Event's count and
// lastTimestamp instead of creating another object. Its name is derived from
// those fields, so the aggregation holds across Lambda containers too (a
// create that finds the name taken bumps the existing Event). Each object's
// events are rate-limited by a token bucket; dropped events are counted.
//
// A failed write is returned for the caller to log; Events are advice and
// must never fail the work they describe.
type Recorder struct {
	c    *Client
	opts RecorderOptions

	mu      sync.Mutex
	counts  map[string]int32 // event name -> last count written
	buckets map[string]*rate.Limiter
	dropped int
	uids    map[string]knownUID // NodeClaim name -> its object's UID
}

// knownUID is a NodeClaim's UID as read at a time.
type knownUID struct {
	uid types.UID
	at  time.Time
}

// uidTTL is how long a NodeClaim's UID is taken as read: a NodeClaim
// deleted and created again under its name has another.
const uidTTL = 10 * time.Minute

// NewRecorder returns a Recorder writing through c.
func NewRecorder(c *Client, opts RecorderOptions) *Recorder {
	if opts.Burst <= 0 {
		opts.Burst = 25
	}
	if opts.Refill <= 0 {
		opts.Refill = 5 * time.Minute
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Recorder{c: c, opts: opts, counts: map[string]int32{}, buckets: map[string]*rate.Limiter{}, uids: map[string]knownUID{}}
}

// Dropped is how many events the rate limit has dropped.
func (r *Recorder) Dropped() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// Eventf records an event (eventType is corev1.EventTypeNormal or
// EventTypeWarning; reason is UpperCamelCase).
func (r *Recorder) Eventf(ctx context.Context, ref ObjectRef, eventType, reason, format string, args ...any) error {
	return r.Event(ctx, ref, eventType, reason, fmt.Sprintf(format, args...))
}

// maxMessage is the longest message written (longer ones are cut).
const maxMessage = 1024

// Event records an event; see Recorder.
func (r *Recorder) Event(ctx context.Context, ref ObjectRef, eventType, reason, message string) error {
	if len(message) > maxMessage {
		message = message[:maxMessage-3] + "..."
	}
	now := r.opts.Now()
	if !r.allow(ref, now) {
		return nil
	}
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault // where cluster-scoped objects' events go
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	ref.UID = r.nodeClaimUID(ctx, ref, now)
	name := eventName(ref, eventType, reason, message)

	r.mu.Lock()
	count, known := r.counts[name]
	r.mu.Unlock()
	if known {
		err := r.bump(ctx, ns, name, count+1, now)
		if err == nil {
			r.remember(name, count+1)
			return nil
		}
		if !apierrors.IsNotFound(err) { // an expired Event is made anew below
			return err
		}
	}
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID,
		},
		Reason: reason, Message: message, Type: eventType,
		Source:         corev1.EventSource{Component: Component},
		FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now), Count: 1,
		ReportingController: Component, ReportingInstance: r.opts.Instance,
	}
	err := r.c.core.Post().Namespace(ns).Resource("events").Body(ev).Do(ctx).Error()
	switch {
	case err == nil:
		r.remember(name, 1)
		return nil
	case apierrors.IsAlreadyExists(err):
		// Another container (or an earlier one) wrote it: bump its count.
		cur := &corev1.Event{}
		if err := r.c.core.Get().Namespace(ns).Resource("events").Name(name).Do(ctx).Into(cur); err != nil {
			return fmt.Errorf("event %s/%s: %w", ns, name, err)
		}
		if err := r.bump(ctx, ns, name, cur.Count+1, now); err != nil {
			return err
		}
		r.remember(name, cur.Count+1)
		return nil
	default:
		return fmt.Errorf("event %s/%s: %w", ns, name, err)
	}
}

func (r *Recorder) bump(ctx context.Context, ns, name string, count int32, now time.Time) error {
	patch, err := json.Marshal(map[string]any{"count": count, "lastTimestamp": metav1.NewTime(now)})
	if err != nil {
		return fmt.Errorf("event %s/%s: %w", ns, name, err)
	}
	if err := r.c.core.Patch(types.MergePatchType).Namespace(ns).Resource("events").Name(name).Body(patch).Do(ctx).Error(); err != nil {
		return fmt.Errorf("event %s/%s: %w", ns, name, err)
	}
	return nil
}

func (r *Recorder) remember(name string, count int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[name] = count
}

// allow takes a token from the object's bucket.
func (r *Recorder) allow(ref ObjectRef, now time.Time) bool {
	k := ref.Kind + "/" + ref.Namespace + "/" + ref.Name
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.buckets[k]
	if !ok {
		b = rate.NewLimiter(rate.Every(r.opts.Refill), r.opts.Burst)
		r.buckets[k] = b
	}
	if b.AllowN(now, 1) {
		return true
	}
	r.dropped++
	r.opts.Log.Debug("event dropped by rate limit", "object", k)
	return false
}

// eventName is the object's name and a hash of what makes two events the
// same, so that a repeat finds the earlier Event.
func eventName(ref ObjectRef, eventType, reason, message string) string {
	h := fnv.New64a()
	for _, s := range []string{ref.Kind, ref.Namespace, ref.Name, string(ref.UID), eventType, reason, message, Component} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	name := ref.Name
	if len(name) > 200 {
		name = name[:200]
	}
	return fmt.Sprintf("%s.%016x", name, h.Sum64())
}

// nodeClaimUID is ref's UID, read from the API server when ref names a
// NodeClaim without one (the flows that read no NodeClaim object name it
// by its record): an event without the UID is not listed by `kubectl
// describe nodeclaim`. Each name is read once per uidTTL; a NodeClaim that
// cannot be read is named as it was.
func (r *Recorder) nodeClaimUID(ctx context.Context, ref ObjectRef, now time.Time) types.UID {
	if ref.UID != "" || ref.Kind != nodeclaim.Kind || ref.APIVersion != nodeclaim.APIVersion || ref.Name == "" {
		return ref.UID
	}
	r.mu.Lock()
	k, ok := r.uids[ref.Name]
	r.mu.Unlock()
	if ok && now.Sub(k.at) < uidTTL {
		return k.uid
	}
	raw, err := rawResult(r.c.core.Get().AbsPath(nodeClaimsPath+"/"+ref.Name).SetHeader("Accept", "application/json").Do(ctx))
	if err != nil {
		r.opts.Log.Debug("event names its NodeClaim without a UID", "nodeClaim", ref.Name, "error", err)
		return ""
	}
	var meta metav1.PartialObjectMetadata
	if err := json.Unmarshal(raw, &meta); err != nil || meta.UID == "" {
		return ""
	}
	r.mu.Lock()
	r.uids[ref.Name] = knownUID{uid: meta.UID, at: now}
	r.mu.Unlock()
	return meta.UID
}
