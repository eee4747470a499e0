// Package nodeclaim keeps one NodeClaim object (karpenter.sh/v1) in the
// cluster for each node record of the state table, as Karpenter users
// expect to find them with `kubectl get nodeclaims`.
//
// The state table stays the source of truth: an object is derived from its
// record (Desired), compared with what the API server holds (Plan), and the
// difference written (Objects). Deleting the objects loses nothing: the
// next sweep creates them again from the records. The one thing read back
// from an object is its deletion: `kubectl delete nodeclaim X` leaves the
// object under Karpenter's termination finalizer, the sweep records a
// deletion intent on the record (the termination path drains the node and
// terminates the instance), and the finalizer is removed once the record
// is gone.
//
// The object is Nodewright's own Go type, JSON-compatible with Karpenter's
// (sigs.k8s.io/karpenter/pkg/apis/v1.NodeClaim, which the tests decode it
// into strictly): Karpenter's package links controller-runtime and
// client-go's whole scheme, and would more than triple the functions'
// binaries.
package nodeclaim
