package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"
)

// TestKarpenterLeases: Karpenter's leader-election Leases are listed in
// every namespace with a field selector on their name, kept to the fields
// handover reads; a cluster role that may not list Leases makes them
// unreadable, not an error.
func TestKarpenterLeases(t *testing.T) {
	for _, c := range []struct {
		name         string
		status       int
		wantReadable bool
		wantLeases   int
		wantErr      bool
	}{
		{"listed", http.StatusOK, true, 2, false},
		{"forbidden", http.StatusForbidden, false, 0, false},
		{"server error", http.StatusInternalServerError, true, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var selector string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/apis/coordination.k8s.io/v1/leases" {
					http.NotFound(w, r)
					return
				}
				selector = r.URL.Query().Get("fieldSelector")
				w.Header().Set("Content-Type", "application/json")
				if c.status != http.StatusOK {
					w.WriteHeader(c.status)
					fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":%d,"reason":"%s"}`, c.status, map[int]string{403: "Forbidden", 500: "InternalError"}[c.status])
					return
				}
				fmt.Fprint(w, `{"kind":"LeaseList","apiVersion":"coordination.k8s.io/v1","metadata":{},"items":[
{"metadata":{"name":"karpenter-leader-election","namespace":"kube-system","annotations":{"a":"b"},"managedFields":[{"manager":"karpenter"}]},
 "spec":{"holderIdentity":"karpenter-7d9f_1","leaseDurationSeconds":15,"renewTime":"2026-11-27T12:00:00.000000Z","leaseTransitions":3}},
{"metadata":{"name":"karpenter-leader-election","namespace":"karpenter"},"spec":{"holderIdentity":"k2","renewTime":"2026-11-27T11:00:00.000000Z"}}]}`)
			}))
			defer srv.Close()
			cl, err := New(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			leases, readable, err := cl.KarpenterLeases(context.Background())
			if (err != nil) != c.wantErr || readable != c.wantReadable || len(leases) != c.wantLeases {
				t.Fatalf("leases %+v readable %v err %v", leases, readable, err)
			}
			if selector != "metadata.name=karpenter-leader-election" {
				t.Errorf("field selector %q", selector)
			}
			if c.wantLeases > 0 {
				l := leases[0]
				if l.Namespace != "karpenter" || leases[1].Namespace != "kube-system" {
					t.Errorf("not sorted by namespace: %s, %s", l.Namespace, leases[1].Namespace)
				}
				k := leases[1]
				if k.Annotations != nil || k.ManagedFields != nil || *k.Spec.HolderIdentity != "karpenter-7d9f_1" ||
					*k.Spec.LeaseDurationSeconds != 15 || k.Spec.RenewTime.Hour() != 12 || k.Spec.LeaseTransitions != nil {
					t.Errorf("kept %+v", k)
				}
			}
		})
	}
}
