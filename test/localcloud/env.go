package localcloud

import "github.com/nodewright/nodewright/shared/names"

// Env is the environment the deployed stack gives the functions, for this
// local cloud: the cluster, the state table, the interruption queue and the
// node role and instance profile, under the variable names of shared/names.
// A function run against the local cloud reads its resources from here as
// it reads them from its Lambda environment on AWS.
func (c *Cloud) Env() map[string]string {
	env := map[string]string{
		names.EnvClusterName:         c.Cluster.Name,
		names.EnvTableName:           c.Names.Table,
		names.EnvNodeRoleName:        c.Names.NodeRole,
		names.EnvInstanceProfileName: c.Names.InstanceProfile,
	}
	if c.Seeded != nil {
		env[names.EnvQueueURL] = c.Seeded.QueueURL
		env[names.EnvRecheckQueueURL] = c.Seeded.RecheckQueueURL
		env[names.EnvRecheckQueueARN] = c.Seeded.RecheckQueueARN
	}
	return env
}
