package scheduling

import (
	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/requirements"
)

// imageRequirements adds to a pool's requirements what its EC2NodeClass's
// image decides, as Karpenter's AMI requirements do: a Windows family's
// nodes run Windows (kubernetes.io/os), report its build and are x86 only
// (the EKS-optimized Windows images are published for amd64 alone); the
// Linux families' nodes run Linux; a Custom image runs what the pool
// requires, else Linux. So a pod that selects an OS, or a DaemonSet that
// does, is planned (or counted) only on the pools whose image runs it.
// family "" is the default, AL2023.
func imageRequirements(reqs requirements.Requirements, family string) requirements.Requirements {
	if build := apis.WindowsBuild(family); build != "" {
		return reqs.Add(requirements.In(apis.LabelOS, apis.OSWindows)).
			Add(requirements.In(apis.LabelWindowsBuild, build)).
			Add(requirements.In(apis.LabelArch, "amd64"))
	}
	if _, set := reqs.Get(apis.LabelOS); set && family == apis.AMIFamilyCustom {
		return reqs
	}
	return reqs.Add(requirements.In(apis.LabelOS, apis.OSLinux))
}
