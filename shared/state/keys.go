// Package state is the functions' durable state in the DynamoDB table the
// stack creates: NodeClaim records, leases (single flight with fencing),
// NodePool launch versions (limits that hold across concurrent launchers),
// offerings EC2 refused recently, disruption actions (interruption and
// consolidation state machines), processed interruption messages, cached spot
// prices and region figures (on-demand prices, offerings per zone), coalesced
// webhook hints and recorded decisions.
//
// It exists so that the provision, interruption and consolidation functions,
// each a short Lambda invocation, act together as one careful controller:
// every multi-step action is written down before it is taken, every write that
// acts on capacity is conditional, and every item that expires carries its
// expiry, which readers check themselves (DynamoDB's TTL deletes items lazily,
// sometimes days late).
//
// Layout: one partition per cluster (pk = the cluster's name); the sort key
// names the kind of item and its identity. Decisions, the only items that
// accumulate, live in their own partition (pk = cluster + "#decisions"), and
// so does the webhook's hint (pk = cluster + "#hints"): the webhook, the one
// function reachable from outside, may write that partition only (IAM's
// dynamodb:LeadingKeys pins a partition key, never a sort key), so it can
// forge no NodeClaim record, lease or action.
package state

import "strings"

// Sort-key prefixes of the cluster partition.
const (
	// PrefixNodeClaim + NodeClaim name: a NodeClaim record.
	PrefixNodeClaim = "nodeclaim#"
	// PrefixLease + lease name: a lease (single flight, fencing token).
	PrefixLease = "lease#"
	// PrefixPool + NodePool name: the pool's launch version.
	PrefixPool = "pool#"
	// PrefixUnavailable + type#zone#capacityType: an offering EC2 refused.
	PrefixUnavailable = "unavailable#"
	// PrefixAction + action ID: a disruption action (interruption,
	// consolidation, deletion).
	PrefixAction = "action#"
	// PrefixMessage + message or event ID: an interruption message handled.
	PrefixMessage = "message#"
	// PrefixChange + <unix millis, 13 digits>#<record>#<version>: a change
	// to NodeClaim records, written in the same transaction as the records
	// it names and kept ChangeRetention (changes.go). A Store's warm
	// NodeClaims reads these instead of every record; a read of the whole
	// partition skips them.
	PrefixChange = "change#"
	// PrefixPodSums + shard (two digits, 00 to PodSumShards-1): a shard of
	// the pods summary (podsums.go), when each node's reschedulable pods
	// last changed, for the records hashed to it (PodSumShard). Kept out of
	// the records, which a tick would otherwise rewrite by the thousand;
	// these are no records and have no change items.
	PrefixPodSums = "podsums#"
	// KeyLaunchVersion is the cluster's launch version: every launcher's
	// records are written conditioned on it and advance it (the launch
	// fence).
	KeyLaunchVersion = "launchversion"
	// KeySpotPrices is the cached spot price table.
	KeySpotPrices = "spotprices"
	// KeyHint is the webhook's coalesced provision hint, the one item of
	// the HintsPartition.
	KeyHint = "hint"
)

// HintsPartition is the partition key of a cluster's webhook hint, the only
// partition the webhook's role may write.
func HintsPartition(cluster string) string { return cluster + "#hints" }

// DecisionsPartition is the partition key of a cluster's recorded decisions.
func DecisionsPartition(cluster string) string { return cluster + "#decisions" }

// Key joins parts into a sort key.
func Key(prefix string, parts ...string) string { return prefix + strings.Join(parts, "#") }
