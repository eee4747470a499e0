package kube

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// A NodeClaim the CRD's schema refuses comes back with the API server's
// reason, so that the log says which field (a 422 Status in JSON: custom
// resources have no protobuf).
func TestNodeClaimWriteErrorsSayWhy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Reason: metav1.StatusReasonInvalid, Code: http.StatusUnprocessableEntity,
			Message: `NodeClaim.karpenter.sh "x" is invalid: spec.requirements[0].operator: Unsupported value: "In"`})
	}))
	t.Cleanup(srv.Close)
	c, err := New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateNodeClaim(context.Background(), []byte(`{}`))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "Unsupported value") {
		t.Errorf("err = %v, want the API server's reason", err)
	}
	_, err = c.PatchNodeClaim(context.Background(), "x", true, []byte(`{}`))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "Unsupported value") {
		t.Errorf("patch err = %v, want the API server's reason", err)
	}
}
