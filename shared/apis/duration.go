package apis

import (
	"encoding/json"
	"time"
)

// NillableDuration is a duration that may also be "Never" (no duration). Raw
// keeps what the user wrote, so defaulting can tell "unset" from "Never".
type NillableDuration struct {
	Duration *time.Duration
	Raw      string
}

// Never is the value that disables a duration.
const Never = "Never"

// IsSet says whether the field was present in the input or defaulted.
func (d NillableDuration) IsSet() bool { return d.Raw != "" }

// UnmarshalJSON reads a string ("30s", "720h", "Never").
func (d *NillableDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	d.Raw = s
	d.Duration = nil
	if s == Never || s == "" {
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		// Kept for validation, which reports the field path and value.
		return nil
	}
	d.Duration = &v
	return nil
}

// MarshalJSON writes the duration back as a string.
func (d NillableDuration) MarshalJSON() ([]byte, error) {
	switch {
	case d.Duration != nil:
		return json.Marshal(d.Duration.String())
	case d.Raw != "":
		return json.Marshal(d.Raw)
	default:
		return json.Marshal(nil)
	}
}
