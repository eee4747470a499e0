// Package apis holds Nodewright's configuration types: Karpenter's v1 NodePool
// (karpenter.sh/v1) and EC2NodeClass (karpenter.k8s.aws/v1), and its
// NodeOverlay (karpenter.sh/v1alpha1), read from the same
// YAML users write for Karpenter, with Karpenter's defaults and validation, plus
// the well-known label and annotation names that launched nodes carry.
//
// It exists so that every function, the CLI and the CDK app agree on one
// definition of the configuration and one loader that rejects bad input with
// the field path of the mistake.
//
// Parse, LoadFiles and LoadDir read multi-document YAML or JSON (List
// documents included, so `kubectl get nodepools,ec2nodeclasses -o yaml`
// output loads), decode strictly (unknown and duplicate fields are errors,
// except unknown fields under status), apply Karpenter's CRD defaults and
// validate each object the way Karpenter's CRD schema, CEL rules and webhooks
// do. A field or value of Karpenter's schemas that Nodewright does not act on
// is refused, with what to do instead (SupportTable), and so are Karpenter's
// other kinds (a NodeClaim). Every error names its source, document and
// field path:
//
//	nodepool.yaml: document 2 (NodePool default): spec.weight: 0 is out of range 1..100
//
// Config.Validate adds the checks that need the whole configuration
// (duplicate names, nodeClassRefs that resolve). Hash gives the drift hashes
// and AllowedDisruptions evaluates disruption budgets at a given time.
package apis
