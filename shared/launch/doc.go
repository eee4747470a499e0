// Package launch is Nodewright's one launch path: everything that turns
// planned NodeClaims into instances. It names them, writes their records
// before any CreateFleet (fenced by the caller's lease and conditioned on
// the cluster's launch version, so two launchers never buy for the same
// pods), resolves and stores each fleet's request under a ClientToken
// unique to the cluster and the launch, calls CreateFleet with throttling
// retries, settles what EC2 launched (adopting instances, removing the
// records left without one, reporting refused offerings), re-drives the
// launches a dead invocation left behind, and gives up on those that
// cannot complete, terminating their instances.
//
// It exists so that every launcher (a provision round, an interruption's
// replacement, a consolidation's replacement) launches the same way, with
// the same guarantees, and so that provisioning keeps to reading, solving
// and registering: provision decides what to launch, launch launches it.
package launch
