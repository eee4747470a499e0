package awsfront

import (
	"net/url"
	"strconv"
)

// listParam returns the values of an EC2 Query list: Name.1, Name.2, ...
func listParam(form url.Values, name string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := form[name+"."+strconv.Itoa(i)]
		if !ok {
			return out
		}
		out = append(out, v...)
	}
}

// filterValues returns the values of the Filter.N whose Name is name.
func filterValues(form url.Values, name string) []string {
	for i := 1; ; i++ {
		p := "Filter." + strconv.Itoa(i)
		n, ok := form[p+".Name"]
		if !ok {
			return nil
		}
		if len(n) > 0 && n[0] == name {
			return listParam(form, p+".Value")
		}
	}
}
