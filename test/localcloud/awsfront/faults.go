package awsfront

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"net/http"
)

// Capacity types as EC2 spells them.
const (
	Spot     = "spot"
	OnDemand = "on-demand"
)

// PoolKey names one capacity pool.
type PoolKey struct {
	InstanceType, Zone, CapacityType string
}

// SetCapacity limits the pool (instanceType, zone, capacityType) to n more
// instances; launches draw it down and 0 makes CreateFleet answer
// InsufficientInstanceCapacity for it. n < 0 makes the pool unlimited again
// (the default for every pool). instanceType and zone may be "*": the limit
// then holds for every pool it matches that has no limit of its own (all
// spot in a zone, a type in every zone, all spot anywhere), one count
// shared by them.
func (f *Front) SetCapacity(instanceType, zone, capacityType string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := PoolKey{instanceType, zone, capacityType}
	if n < 0 {
		delete(f.pools, k)
		return
	}
	f.pools[k] = n
}

// Capacity returns the pool's remaining capacity, -1 when unlimited.
func (f *Front) Capacity(instanceType, zone, capacityType string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n, ok := f.pools[PoolKey{instanceType, zone, capacityType}]; ok {
		return n
	}
	return -1
}

// take draws up to want instances from the pool and returns how many it got.
func (f *Front) take(k PoolKey, want int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	lk, ok := f.limitOf(k)
	if !ok {
		return want
	}
	n := f.pools[lk]
	got := min(n, want)
	f.pools[lk] = n - got
	return got
}

// limitOf is the key whose limit holds for pool k: its own, else the most
// specific wildcard that matches it.
func (f *Front) limitOf(k PoolKey) (PoolKey, bool) {
	for _, c := range []PoolKey{k, {k.InstanceType, "*", k.CapacityType}, {"*", k.Zone, k.CapacityType}, {"*", "*", k.CapacityType}} {
		if _, ok := f.pools[c]; ok {
			return c, true
		}
	}
	return PoolKey{}, false
}

// giveBack returns instances that were drawn but not launched.
func (f *Front) giveBack(k PoolKey, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if lk, ok := f.limitOf(k); ok && n > 0 {
		f.pools[lk] += n
	}
}

// Throttle makes the next n calls of action (an EC2 Action such as
// "CreateFleet", or a JSON operation such as "SendMessage") fail with the
// service's throttling error. n = 0 clears it.
func (f *Front) Throttle(action string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n <= 0 {
		delete(f.throttles, action)
		return
	}
	f.throttles[action] = n
}

// Throttled returns how many calls of action the front has throttled.
func (f *Front) Throttled(action string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.throttled[action]
}

func (f *Front) takeThrottle(action string) bool {
	if action == "" {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.throttles[action]
	if n <= 0 {
		return false
	}
	f.throttled[action]++
	if n == 1 {
		delete(f.throttles, action)
	} else {
		f.throttles[action] = n - 1
	}
	return true
}

// ec2ErrorResponse is EC2's Query API error document.
type ec2ErrorResponse struct {
	XMLName   xml.Name   `xml:"Response"`
	Errors    []ec2Error `xml:"Errors>Error"`
	RequestID string     `xml:"RequestID"`
}

type ec2Error struct {
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

func writeEC2Error(w http.ResponseWriter, status int, code, msg string) {
	b, _ := xml.Marshal(ec2ErrorResponse{Errors: []ec2Error{{code, msg}}, RequestID: requestID()})
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(append([]byte(xml.Header), b...))
}

func writeJSONError(w http.ResponseWriter, status int, typ, msg string) {
	b, _ := json.Marshal(map[string]string{"__type": typ, "message": msg})
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.Header().Set("X-Amzn-RequestId", requestID())
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeThrottle answers as the service does when it throttles: EC2 with
// RequestLimitExceeded (HTTP 503), JSON services with ThrottlingException.
func writeThrottle(w http.ResponseWriter, req request) {
	if req.form != nil {
		writeEC2Error(w, http.StatusServiceUnavailable, "RequestLimitExceeded", "Request limit exceeded.")
		return
	}
	writeJSONError(w, http.StatusBadRequest, "ThrottlingException", "Rate exceeded")
}

func requestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
