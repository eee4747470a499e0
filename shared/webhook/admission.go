package webhook

import (
	"encoding/json"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/logging"
	"github.com/nodewright/nodewright/shared/podstate"
)

// review is the outcome of one AdmissionReview.
type review struct {
	// response is the AdmissionReview to send back (always allowed).
	response []byte
	// pending is the pod that has just become unschedulable, if any.
	pending *corev1.Pod
	// dryRun is true when the API server will not persist the change.
	dryRun bool
	// uid is the request's UID, for logs.
	uid string
	// namespace and name are the request's (the object's, when its
	// metadata leaves them out).
	namespace, name string
}

var podsResource = metav1.GroupVersionResource{Group: "", Version: "v1", Resource: "pods"}

// decideReview parses an admission.k8s.io/v1 AdmissionReview, answers it with
// allowed=true and the request's UID, and reports the pod if kube-scheduler
// has just marked it Unschedulable.
func decideReview(body []byte) (review, error) {
	var in admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &in); err != nil {
		return review{}, fmt.Errorf("decode AdmissionReview: %w", err)
	}
	if in.APIVersion != admissionv1.SchemeGroupVersion.String() || in.Kind != "AdmissionReview" {
		return review{}, fmt.Errorf("decode AdmissionReview: apiVersion %s kind %s, want %s AdmissionReview",
			logging.Quote(in.APIVersion), logging.Quote(in.Kind), admissionv1.SchemeGroupVersion)
	}
	req := in.Request
	if req == nil || req.UID == "" {
		return review{}, errors.New("decode AdmissionReview: no request or no request uid")
	}
	out := admissionv1.AdmissionReview{
		TypeMeta: in.TypeMeta,
		Response: &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true},
	}
	resp, err := json.Marshal(out)
	if err != nil {
		return review{}, fmt.Errorf("encode AdmissionReview: %w", err)
	}
	r := review{response: resp, uid: string(req.UID), dryRun: req.DryRun != nil && *req.DryRun, namespace: req.Namespace, name: req.Name}
	if req.Resource != podsResource || req.SubResource != "status" || req.Operation != admissionv1.Update {
		return r, nil
	}
	var pod, old corev1.Pod
	if err := decodePodStatus(req.Object.Raw, &pod); err != nil {
		// The answer is still "allowed"; the pod is just not a usable hint.
		return r, fmt.Errorf("decode pod of AdmissionReview %s: %w", logging.Quote(string(req.UID)), err)
	}
	if len(req.OldObject.Raw) > 0 {
		if err := decodePodStatus(req.OldObject.Raw, &old); err != nil {
			return r, fmt.Errorf("decode old pod of AdmissionReview %s: %w", logging.Quote(string(req.UID)), err)
		}
	}
	if pod.Spec.NodeName == "" && podstate.Unschedulable(&pod) && !podstate.Unschedulable(&old) {
		r.pending = &pod
	}
	return r, nil
}

// podStatusView is the part of a pod the webhook reads: its identity, node
// and conditions. Decoding only these keeps the rest of the pod (resource
// quantities above all, whose parser can be made to spin) out of the
// request path.
type podStatusView struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
	Status struct {
		Conditions []corev1.PodCondition `json:"conditions"`
	} `json:"status"`
}

func decodePodStatus(raw []byte, pod *corev1.Pod) error {
	var v podStatusView
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	pod.ObjectMeta, pod.Spec.NodeName, pod.Status.Conditions = v.ObjectMeta, v.Spec.NodeName, v.Status.Conditions
	return nil
}
