// Package names holds the names that the deployed stack, the functions and the
// local cloud must agree on: environment variables, the state table's schema
// (key, TTL and index attribute names), the tags Nodewright puts on EC2
// resources, and the Kubernetes identity the functions act as.
//
// It exists so that these strings live in one place: the CDK app writes them
// into the CloudFormation template, the functions read them at run time, and
// the local cloud seeds its table with them, and none can drift from the other.
// It imports nothing but the standard library's time, so any package may
// use it.
package names

import "time"

// Environment variables the stack sets on the functions.
const (
	// EnvClusterName is the EKS cluster the functions manage.
	EnvClusterName = "NODEWRIGHT_CLUSTER_NAME"
	// EnvTableName is the DynamoDB state table.
	EnvTableName = "NODEWRIGHT_TABLE_NAME"
	// EnvQueueURL is the SQS interruption queue.
	EnvQueueURL = "NODEWRIGHT_QUEUE_URL"
	// EnvRecheckQueueURL and EnvRecheckQueueARN are the interruption
	// recheck queue (InterruptionRecheckDelay): the function changes the
	// visibility of its messages by URL and tells its batches apart by the
	// event source ARN.
	EnvRecheckQueueURL = "NODEWRIGHT_RECHECK_QUEUE_URL"
	EnvRecheckQueueARN = "NODEWRIGHT_RECHECK_QUEUE_ARN"
	// EnvConfigDir is the directory of validated Karpenter v1 YAML the
	// functions load with apis.LoadDir (a Lambda layer on AWS).
	EnvConfigDir = "NODEWRIGHT_CONFIG_DIR"
	// EnvConfigHash is the SHA-256 of the configuration directory's content,
	// so logs and drift detection can name the configuration in force.
	EnvConfigHash = "NODEWRIGHT_CONFIG_HASH"
	// EnvNodeRoleName is the IAM role of launched nodes that the stack created.
	EnvNodeRoleName = "NODEWRIGHT_NODE_ROLE_NAME"
	// EnvInstanceProfileName is the instance profile of that role.
	EnvInstanceProfileName = "NODEWRIGHT_INSTANCE_PROFILE_NAME"
	// EnvProvisionFunction is the provision function's name (the webhook
	// invokes it asynchronously).
	EnvProvisionFunction = "NODEWRIGHT_PROVISION_FUNCTION"
	// EnvWebhookSecretARN is the Secrets Manager secret holding the webhook's
	// shared token.
	EnvWebhookSecretARN = "NODEWRIGHT_WEBHOOK_SECRET_ARN"
	// EnvMetricsNamespace overrides the CloudWatch namespace of the functions'
	// metrics (the default is metrics.Namespace).
	EnvMetricsNamespace = "NODEWRIGHT_METRICS_NAMESPACE"
	// EnvLogLevel is the slog level: debug, info, warn or error.
	EnvLogLevel = "NODEWRIGHT_LOG_LEVEL"
	// EnvRegistrationTimeout is how long a launched NodeClaim may take to
	// register its Node before it is terminated (a Go duration, "15m").
	EnvRegistrationTimeout = "NODEWRIGHT_REGISTRATION_TIMEOUT"
)

// The state table's schema. Every item has a partition key and a sort key
// (both strings); items that expire carry TTLAttribute as epoch seconds.
// Readers must still check the expiry themselves: DynamoDB deletes expired
// items lazily, sometimes days late.
const (
	// PartitionKey is the table's partition key attribute (string).
	PartitionKey = "pk"
	// SortKey is the table's sort key attribute (string).
	SortKey = "sk"
	// TTLAttribute holds an item's expiry in Unix seconds (number).
	TTLAttribute = "expiresAt"

	// IndexByInstanceID finds the item of an EC2 instance (a NodeClaim) by
	// its instance ID: the interruption flow's lookup. Sparse: only items
	// with InstanceIDAttribute appear in it.
	IndexByInstanceID = "byInstanceId"
	// InstanceIDAttribute is IndexByInstanceID's partition key (string).
	InstanceIDAttribute = "instanceId"

	// IndexByNodePool lists a NodePool's items (NodeClaims, in-flight
	// launches) in sort-key order: limits and consolidation read it. Sparse:
	// only items with NodePoolAttribute appear in it.
	IndexByNodePool = "byNodePool"
	// NodePoolAttribute is IndexByNodePool's partition key (string).
	NodePoolAttribute = "nodePool"
	// IndexByNodePoolSortKey is IndexByNodePool's sort key: the table's own
	// sort key, so a NodePool's items come back grouped by kind.
	IndexByNodePoolSortKey = SortKey
)

// InterruptionMaxReceives is how often the interruption queue hands out a
// message before moving it to the dead-letter queue: a transient API error
// gets two more chances, a malformed event stops there.
const InterruptionMaxReceives = 3

// InterruptionRetryVisibility is how soon the interruption queue hands out
// a message whose handling failed again: the interruption handler sets it
// on each failed message with ChangeMessageVisibility (the queue's own
// visibility timeout, which must exceed the function's timeout, only
// applies to the messages of an invocation that crashed). A spot warning
// gives two minutes. The queue's retention is at least
// (InterruptionMaxReceives + 1) times this, so a message that always fails
// reaches the DLQ; a test of the stack holds the template to it.
const InterruptionRetryVisibility = 30 * time.Second

// InterruptionHeartbeat is how long a message the interruption handler is
// working on stays out of sight: the handler extends it while it works
// (ChangeMessageVisibility), so a message whose invocation died comes back
// within this, not after the queue's visibility timeout (minutes: it must
// exceed the function's timeout). The redelivered message's invocation
// takes the node over once the dead one's lease, as short, has lapsed: a
// spot drain resumes within it, inside the warning's two minutes.
const InterruptionHeartbeat = 10 * time.Second

// InterruptionRecheckDelay is how long after its first delivery an urgent
// event (trigger.RecheckDetailTypes) is delivered a second time, from the
// recheck queue (its queue-level delay). An invocation that dies before its
// first call (before its first heartbeat) leaves its batch to the main
// queue's visibility timeout, minutes past a spot warning's two; the
// recheck delivery handles such an event instead, and acknowledges one a
// first delivery is on. Why 20 s: it is longer than a healthy first
// delivery needs to take its first heartbeat and record the action (a
// second or two, a cold start's set-up included), so the recheck finds it
// and does nothing; and short enough that a recheck that has to act, or
// to take the node over once a dead holder's lease (DefaultLeaseTTL) has
// lapsed, still beats the warning's deadline.
const InterruptionRecheckDelay = 20 * time.Second

// Tags Nodewright puts on the EC2 resources it creates (instances, volumes,
// network interfaces, fleets, launch templates). The IAM policy the stack
// grants allows creating resources only with these tags in the request and
// terminating only resources that carry them.
const (
	// TagKeyClusterPrefix + cluster name = "owned" marks a resource as this
	// cluster's (the Kubernetes cloud-provider convention Karpenter follows).
	TagKeyClusterPrefix = "kubernetes.io/cluster/"
	// TagValueOwned is the value of the cluster tag.
	TagValueOwned = "owned"
	// TagKeyEKSClusterName names the cluster (EKS's own tag key).
	TagKeyEKSClusterName = "eks:eks-cluster-name"
	// TagKeyNodePool names the NodePool a resource was launched for (equal to
	// apis.LabelNodePool, as in Karpenter).
	TagKeyNodePool = "karpenter.sh/nodepool"
	// TagKeyNodeClaim names the NodeClaim an instance belongs to (equal to
	// apis.LabelNodeClaim).
	TagKeyNodeClaim = "karpenter.sh/nodeclaim"
	// TagKeyEC2NodeClass names the EC2NodeClass an instance was launched with.
	TagKeyEC2NodeClass = "karpenter.k8s.aws/ec2nodeclass"
	// TagKeyName is EC2's display name tag.
	TagKeyName = "Name"
	// TagKeyManagedBy marks an instance as launched by Nodewright (value
	// TagValueManagedBy). Karpenter's instances carry the same karpenter.sh
	// tags, so garbage collection terminates only instances with this tag.
	TagKeyManagedBy   = "nodewright.io/managed-by"
	TagValueManagedBy = "nodewright"
)

// TagKeyCluster returns the cluster ownership tag key for cluster
// ("kubernetes.io/cluster/<cluster>"); its value is TagValueOwned.
func TagKeyCluster(cluster string) string { return TagKeyClusterPrefix + cluster }

// The Kubernetes identity of the functions: the stack's EKS access entries map
// the functions' IAM roles to KubernetesGroup, and the RBAC manifest binds
// ClusterRoleName to that group.
const (
	KubernetesGroup = "nodewright:controller"
	ClusterRoleName = "nodewright-controller"
	// KubernetesUsernamePrefix + function name is the user a function's role
	// appears as in the cluster's audit log.
	KubernetesUsernamePrefix = "nodewright:"
)

// WebhookHintSource is the "source" of the hint the webhook sends to the
// provision function.
const WebhookHintSource = "nodewright.webhook"
