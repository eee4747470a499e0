// Package apis holds Nodewright's configuration types: Karpenter's v1 NodePool
// (karpenter.sh/v1) and EC2NodeClass (karpenter.k8s.aws/v1), read from the same
// YAML users write for Karpenter, with Karpenter's defaults and validation, plus
// the well-known label and annotation names that launched nodes carry.
//
// It exists so that every function, the CLI and the CDK app agree on one
// definition of the configuration and one loader that rejects bad input with
// the field path of the mistake.
package apis
