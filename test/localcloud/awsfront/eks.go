package awsfront

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
)

// EKSCluster is what the front answers eks:DescribeCluster with: the local
// control plane, as EKS describes a cluster.
type EKSCluster struct {
	Name, Endpoint, Version, ServiceCIDR string
	CAData                               []byte // PEM
}

// SetEKSCluster makes DescribeCluster answer for c (moto's EKS would invent
// an endpoint and CA that reach nothing).
func (f *Front) SetEKSCluster(c EKSCluster) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.eks = &c
}

// describeCluster answers GET /clusters/<name> (EKS's REST-JSON protocol);
// false when the request is not that.
func (f *Front) describeCluster(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/clusters/") {
		return false
	}
	name, err := url.PathUnescape(strings.TrimPrefix(r.URL.Path, "/clusters/"))
	if err != nil || strings.Contains(name, "/") {
		return false
	}
	f.mu.Lock()
	c := f.eks
	f.mu.Unlock()
	if c == nil || c.Name != name {
		w.Header().Set("X-Amzn-ErrorType", "ResourceNotFoundException")
		writeJSONError(w, http.StatusNotFound, "ResourceNotFoundException", "No cluster found for name: "+name+".")
		return true
	}
	writeJSON(w, map[string]any{"cluster": map[string]any{
		"name":                 c.Name,
		"arn":                  "arn:aws:eks:" + f.cfg.Region + ":" + f.cfg.Account + ":cluster/" + c.Name,
		"endpoint":             c.Endpoint,
		"version":              c.Version,
		"status":               "ACTIVE",
		"certificateAuthority": map[string]string{"data": base64.StdEncoding.EncodeToString(c.CAData)},
		"kubernetesNetworkConfig": map[string]string{
			"serviceIpv4Cidr": c.ServiceCIDR, "ipFamily": "ipv4",
		},
		"accessConfig": map[string]string{"authenticationMode": "API"},
	}})
	return true
}

// presignedCallerIdentity lets moto answer a presigned (SigV4 query) STS
// GetCallerIdentity: moto picks the service and the caller from an
// Authorization header, which a presigned URL carries in its query
// (X-Amz-Credential, X-Amz-SignedHeaders, X-Amz-Signature) instead; without
// one moto takes the GET for S3. The header is rebuilt from the query.
// (moto verifies no signature either way.)
func presignedCallerIdentity(r *http.Request) {
	q := r.URL.Query()
	if q.Get("Action") != "GetCallerIdentity" || q.Get("X-Amz-Credential") == "" || r.Header.Get("Authorization") != "" {
		return
	}
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+q.Get("X-Amz-Credential")+
		", SignedHeaders="+q.Get("X-Amz-SignedHeaders")+", Signature="+q.Get("X-Amz-Signature"))
	if r.Header.Get("X-Amz-Date") == "" {
		r.Header.Set("X-Amz-Date", q.Get("X-Amz-Date"))
	}
}
