package nodecost

import "github.com/nodewright/nodewright/shared/apis"

// WindowsLicence is what EC2 charges on top of an instance's Linux price
// for a Windows Server licence (licence included), per vCPU-hour. EC2
// prices the licence by vCPU: the figure is the difference between the
// Windows and Linux on-demand prices of m5.large (2 vCPUs) in us-east-1 on
// AWS's EC2 on-demand price list (aws.amazon.com/ec2/pricing/on-demand),
// $0.188 against $0.096 an hour, as listed in 2024 (and every year since
// m5's launch); c5.large gives the same, $0.177 against $0.085. A Windows
// spot instance is charged the licence too, on top of its spot price.
var WindowsLicence = LicenceRate{PerVCPUHour: 0.046, AsOf: "2024", Source: "aws.amazon.com/ec2/pricing/on-demand, us-east-1, m5.large: Windows $0.188/h - Linux $0.096/h, over 2 vCPUs"}

// LicenceRate is an operating system licence's hourly price per vCPU.
type LicenceRate struct {
	PerVCPUHour float64
	// AsOf and Source say where and when the figure was read.
	AsOf, Source string
}

// LicencePerVCPUHour is the licence a node of an AMI family pays per vCPU
// and hour on top of its instance's (Linux) price: Windows's for the
// Windows families, nothing for the Linux ones. Custom images are priced
// as Linux: Nodewright cannot tell what they run.
func LicencePerVCPUHour(family string) float64 {
	if apis.IsWindowsFamily(family) {
		return WindowsLicence.PerVCPUHour
	}
	return 0
}
