package awsfront

import (
	"encoding/json"
	"net/http"
	"strings"
)

// PublicPrefix is the namespace of AWS's public SSM parameters, which moto
// refuses to store ("reserved parameter name"); the front serves them.
const PublicPrefix = "/aws/service/"

// SetPublicParameter serves name (under /aws/service/) with value.
func (f *Front) SetPublicParameter(name, value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.params[name] = value
}

type ssmParameter struct {
	ARN              string  `json:"ARN"`
	DataType         string  `json:"DataType"`
	LastModifiedDate float64 `json:"LastModifiedDate"`
	Name             string  `json:"Name"`
	Type             string  `json:"Type"`
	Value            string  `json:"Value"`
	Version          int     `json:"Version"`
}

// ssm answers GetParameter(s) for public parameters; other names go to moto.
func (f *Front) ssm(w http.ResponseWriter, req request) bool {
	var in struct {
		Name  string   `json:"Name"`
		Names []string `json:"Names"`
	}
	if err := json.Unmarshal(req.body, &in); err != nil {
		return false
	}
	names := in.Names
	if in.Name != "" {
		names = []string{in.Name}
	}
	if len(names) == 0 {
		return false
	}
	for _, n := range names {
		if !strings.HasPrefix(n, PublicPrefix) {
			return false
		}
	}
	var found []ssmParameter
	var missing []string
	for _, n := range names {
		if p, ok := f.publicParameter(n); ok {
			found = append(found, p)
		} else {
			missing = append(missing, n)
		}
	}
	if req.action == "GetParameter" {
		if len(found) == 0 {
			writeJSONError(w, http.StatusBadRequest, "ParameterNotFound", "Parameter "+names[0]+" not found.")
			return true
		}
		writeJSON(w, map[string]any{"Parameter": found[0]})
		return true
	}
	if missing == nil {
		missing = []string{}
	}
	if found == nil {
		found = []ssmParameter{}
	}
	writeJSON(w, map[string]any{"Parameters": found, "InvalidParameters": missing})
	return true
}

func (f *Front) publicParameter(name string) (ssmParameter, bool) {
	f.mu.Lock()
	v, ok := f.params[name]
	f.mu.Unlock()
	if !ok {
		return ssmParameter{}, false
	}
	return ssmParameter{
		ARN:              "arn:aws:ssm:" + f.cfg.Region + "::parameter" + name,
		DataType:         "text",
		LastModifiedDate: float64(f.cfg.Now().Unix()),
		Name:             name,
		Type:             "String",
		Value:            v,
		Version:          1,
	}, true
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-RequestId", requestID())
	_, _ = w.Write(b)
}
