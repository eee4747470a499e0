// Package fleet launches the NodeClaims a solve plans: one EC2 instance per
// NodeClaim, with one instant CreateFleet call whose overrides are the
// claim's instance types (cheapest first) in one subnet of each of its zones.
//
// It exists so that the provision flow (and `make run`, and the tests) launch
// capacity the same way: the EC2NodeClass is resolved to subnets, security
// groups and AMIs (the al2023 alias through the public SSM parameters of the
// cluster's Kubernetes version); a launch template per AMI carries the AL2023
// user data (a NodeConfig with the cluster, the node's labels and taints and
// the kubelet settings), IMDSv2, disks, the instance profile and tags, and is
// reused by a name derived from its content; the fleet request carries the
// tags the stack's IAM policy demands; and the fleet's per-override errors
// come back as typed unavailable offerings the caller can cache and solve
// around.
//
// Building requests is pure (plain values in, plain values out, the same
// output for the same input); the I/O sits in Launcher, behind the narrow
// EC2API and SSMAPI interfaces declared here.
package fleet
