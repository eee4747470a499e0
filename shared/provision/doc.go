// Package provision is the provision function's reconcile: a round reads
// the cluster (pending pods, nodes, daemonsets, the NodePools and
// EC2NodeClasses deployed and applied), the state table (NodeClaim
// records, unavailable offerings, the launch versions) and spot prices;
// has shared/launch re-drive the launches a crashed invocation left; moves
// NodeClaims through registration; solves; hands the plan to shared/launch
// (records written fenced before CreateFleet, identical NodeClaims in one
// fleet); and solves again at once without the offerings EC2 refused, or
// after another launcher's commit won the launch fence. A sweep adds
// liveness and garbage collection (instances, records, launch templates),
// and has package termination carry on the removals under way (deleted
// Nodes, records whose termination intent says drain, orphans that run
// pods).
//
// It exists so that the provision function's handler, `make run` and the
// end-to-end tests run the same reconcile, and so that the interruption and
// consolidation functions launch replacements through the same code path
// (Inputs.Only).
//
// Pure decisions (Prepare, registrations, liveness) take plain
// values and return plain values; the Reconciler carries them out through
// narrow interfaces to Kubernetes, EC2 and the state table.
package provision
