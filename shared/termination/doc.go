// Package termination is the one way a node leaves the cluster, as
// Karpenter's termination controller: every reason to remove a node
// (consolidation, expiry, drift, an interruption, `kubectl delete node`,
// an orphan instance that runs pods) records one termination intent on the
// node's record (state.Disruption, merged with state.Merge), and one state
// machine per node carries it out from what is true now:
//
//	intent recorded -> tainted and cordoned -> draining -> terminating -> released
//
// tainted and cordoned: karpenter.sh/disrupted:NoSchedule keeps new pods
// off. draining: the pods go through the Eviction API, PodDisruptionBudgets
// and karpenter.sh/do-not-disrupt honoured until the intent's deadline, each
// pod's own grace honoured (package drain has the per-pod rules).
// terminating: the record says so before the instance is terminated, so
// the node is never drained again. released: the Node's finalizer is
// removed, the Node deleted and the record removed.
//
// It exists so that the interruption handler, consolidation's executor and
// the provision sweep retire nodes through the same code, and so that an
// urgent intent arriving while another action drains the node (a spot
// warning on a node being consolidated or replaced for a rebalance)
// shortens the drain in progress instead of being dropped or fighting it
// over taints: recording an intent needs no lease, only the record's
// version, and whoever drains re-reads the record between passes.
//
// Each call is resumable: it carries on from the record and the cluster as
// they are, and a call that runs out of time leaves the rest to the next.
package termination
