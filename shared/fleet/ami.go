package fleet

import (
	"fmt"
	"sort"
	"strings"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
)

// The EKS-optimized AL2023 AMI variants.
const (
	VariantStandard = "standard"
	VariantNvidia   = "nvidia"
	VariantNeuron   = "neuron"
)

// aliasParameter is one public SSM parameter an al2023 alias reads, and the
// AMI architecture and variant its value is for.
type aliasParameter struct {
	Name    string
	Arch    string // amd64 or arm64
	Variant string
}

// al2023Variants are the variants AWS publishes per EC2 architecture.
var al2023Variants = []struct {
	ec2Arch, arch string
	variants      []string
}{
	{"x86_64", "amd64", []string{VariantStandard, VariantNvidia, VariantNeuron}},
	{"arm64", "arm64", []string{VariantStandard, VariantNvidia}},
}

// AL2023Parameters are the public SSM parameters that name the EKS-optimized
// AL2023 AMIs for Kubernetes minor version k8s and alias version version
// ("latest" or a release such as "v20251120"): for latest
// /aws/service/eks/optimized-ami/<k8s>/amazon-linux-2023/<arch>/<variant>/recommended/image_id,
// for a release .../<arch>/<variant>/amazon-eks-node-al2023-<arch>-<variant>-<k8s>-<version>/image_id,
// as Karpenter reads them.
func AL2023Parameters(k8s, version string) []aliasParameter {
	var out []aliasParameter
	for _, a := range al2023Variants {
		for _, v := range a.variants {
			leaf := "recommended"
			if version != apis.AliasVersionLatest {
				leaf = fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", a.ec2Arch, v, k8s, version)
			}
			out = append(out, aliasParameter{
				Name: fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/%s/image_id", k8s, a.ec2Arch, v, leaf),
				Arch: a.arch, Variant: v,
			})
		}
	}
	return out
}

// BottlerocketParameters are the public SSM parameters that name the
// Bottlerocket AMIs for Kubernetes minor version k8s and alias version
// version ("latest" or a release, with or without its leading v: v1.46.0):
// /aws/service/bottlerocket/aws-k8s-<k8s>[-nvidia]/<arch>/<version>/image_id,
// as Karpenter reads them. The x86_64 standard image also boots Inferentia
// and Trainium types (Bottlerocket has no neuron variant of its own); the
// -nvidia variants boot NVIDIA GPU types.
func BottlerocketParameters(k8s, version string) []aliasParameter {
	version = strings.TrimPrefix(version, "v")
	name := func(variant, ec2Arch string) string {
		return fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s%s/%s/%s/image_id", k8s, variant, ec2Arch, version)
	}
	return []aliasParameter{
		{Name: name("", "x86_64"), Arch: "amd64", Variant: VariantStandard},
		{Name: name("", "x86_64"), Arch: "amd64", Variant: VariantNeuron},
		{Name: name("-nvidia", "x86_64"), Arch: "amd64", Variant: VariantNvidia},
		{Name: name("", "arm64"), Arch: "arm64", Variant: VariantStandard},
		{Name: name("-nvidia", "arm64"), Arch: "arm64", Variant: VariantNvidia},
	}
}

// AL2Parameters are the public SSM parameters that name the EKS-optimized
// Amazon Linux 2 AMIs for Kubernetes minor version k8s and alias version
// version ("latest" or a release such as "v20250403"), as Karpenter reads
// them: /aws/service/eks/optimized-ami/<k8s>/<image>/<leaf>/image_id, where
// image is amazon-linux-2 (x86_64), amazon-linux-2-arm64 or
// amazon-linux-2-gpu (x86_64, NVIDIA and Neuron drivers alike) and leaf is
// recommended for latest, else the release's name
// (amazon-eks[-arm64|-gpu]-node-<k8s>-<version>).
func AL2Parameters(k8s, version string) []aliasParameter {
	name := func(image, release string) string {
		leaf := "recommended"
		if version != apis.AliasVersionLatest {
			leaf = fmt.Sprintf("%s-%s-%s", release, k8s, version)
		}
		return fmt.Sprintf("/aws/service/eks/optimized-ami/%s/%s/%s/image_id", k8s, image, leaf)
	}
	gpu := name("amazon-linux-2-gpu", "amazon-eks-gpu-node")
	return []aliasParameter{
		{Name: name("amazon-linux-2", "amazon-eks-node"), Arch: "amd64", Variant: VariantStandard},
		{Name: gpu, Arch: "amd64", Variant: VariantNvidia},
		{Name: gpu, Arch: "amd64", Variant: VariantNeuron},
		{Name: name("amazon-linux-2-arm64", "amazon-eks-arm64-node"), Arch: "arm64", Variant: VariantStandard},
	}
}

// AliasParameters are the public SSM parameters an AMI alias
// (family@version, family as in the alias: al2023, windows2022) reads, or
// an error naming the families Nodewright resolves.
func AliasParameters(family, k8s, version string) ([]aliasParameter, error) {
	return aliasParameters(family, k8s, version)
}

// aliasParameters are the SSM parameters of an AMI alias's family, or an
// error naming the families Nodewright resolves.
func aliasParameters(family, k8s, version string) ([]aliasParameter, error) {
	switch family {
	case "al2023":
		return AL2023Parameters(k8s, version), nil
	case "al2":
		return AL2Parameters(k8s, version), nil
	case "bottlerocket":
		return BottlerocketParameters(k8s, version), nil
	}
	if w, ok := windowsReleases[family]; ok {
		return WindowsParameters(w, k8s, version)
	}
	return nil, fmt.Errorf("alias %s@%s: Nodewright launches AL2023 (al2023@...), AL2 (al2@...), Bottlerocket (bottlerocket@...) and Windows (windows2019@latest, windows2022@latest, windows2025@latest) images, or images selected by id, name, tags or ssmParameter", family, version)
}

// kubeArch maps an EC2 image architecture to Kubernetes's name for it.
func kubeArch(a string) string {
	switch a {
	case "x86_64":
		return "amd64"
	case "arm64":
		return "arm64"
	}
	return ""
}

// variantOf is the AL2023 variant an instance type boots: nvidia for NVIDIA
// GPUs, neuron for Inferentia and Trainium, standard otherwise.
func variantOf(it *catalog.InstanceType) string {
	switch {
	case it.GPU.Count > 0 && it.GPU.Manufacturer == "nvidia":
		return VariantNvidia
	case it.Accelerator.Count > 0 && (it.Accelerator.Name == "inferentia" || it.Accelerator.Name == "inferentia2" ||
		it.Accelerator.Name == "trainium" || it.Accelerator.Name == "trainium2"):
		return VariantNeuron
	}
	return VariantStandard
}

// amiFor picks the AMI that boots it: an exact (architecture, variant) match
// first, then an image of the architecture that serves any variant.
func amiFor(amis []AMI, it *catalog.InstanceType) (AMI, bool) {
	variant := variantOf(it)
	var any *AMI
	for i := range amis {
		a := &amis[i]
		if a.Arch != it.Arch {
			continue
		}
		if a.Variant == variant {
			return *a, true
		}
		if a.Variant == "" && any == nil {
			any = a
		}
	}
	if any != nil {
		return *any, true
	}
	return AMI{}, false
}

// image is an EC2 image as DescribeImages reports it.
type image struct {
	ID, Name, Arch, Created string
}

// newestPerArch keeps the newest image of each architecture (creation date,
// then ID as the tie-break), as Karpenter does for selector terms that match
// several images.
func newestPerArch(imgs []image) []AMI {
	best := map[string]image{}
	for _, im := range imgs {
		if im.Arch == "" {
			continue
		}
		cur, ok := best[im.Arch]
		if !ok || im.Created > cur.Created || (im.Created == cur.Created && im.ID < cur.ID) {
			best[im.Arch] = im
		}
	}
	out := make([]AMI, 0, len(best))
	for _, im := range best {
		out = append(out, AMI{ID: im.ID, Name: im.Name, Arch: im.Arch})
	}
	sortAMIs(out)
	return out
}

func sortAMIs(amis []AMI) {
	sort.Slice(amis, func(i, j int) bool {
		a, b := amis[i], amis[j]
		if a.Arch != b.Arch {
			return a.Arch < b.Arch
		}
		if a.Variant != b.Variant {
			return a.Variant < b.Variant
		}
		return a.ID < b.ID
	})
}
