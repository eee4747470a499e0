package apis

import (
	"encoding/json"
	"regexp"
	"time"
)

// NillableDuration is a duration that may also be "Never" (no duration). Raw
// keeps what the user wrote, so defaulting can tell "unset" from "Never" and
// validation can report the text that did not parse.
type NillableDuration struct {
	Duration *time.Duration
	Raw      string
}

// Never is the value that disables a duration.
const Never = "Never"

// nillableDurationPattern is Karpenter's pattern for consolidateAfter and
// expireAfter (with the grouping the CRD intends).
var nillableDurationPattern = regexp.MustCompile(`^(([0-9]+(s|m|h))+|Never)$`)

// IsSet says whether the field was present in the input or defaulted.
func (d NillableDuration) IsSet() bool { return d.Raw != "" || d.Duration != nil }

// IsNever says whether the duration is "Never".
func (d NillableDuration) IsNever() bool { return d.Duration == nil && d.Raw == Never }

// DurationOf returns the NillableDuration for d, as a defaulted value would be.
func DurationOf(d time.Duration) NillableDuration {
	return NillableDuration{Duration: &d, Raw: d.String()}
}

// UnmarshalJSON reads a string ("30s", "720h", "Never"). Text that is not a
// valid duration is kept in Raw for validation, which reports the field path.
func (d *NillableDuration) UnmarshalJSON(b []byte) error {
	var s *string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*d = NillableDuration{}
	if s == nil {
		return nil
	}
	d.Raw = *s
	if *s == Never || *s == "" {
		return nil
	}
	if v, err := time.ParseDuration(*s); err == nil {
		d.Duration = &v
	}
	return nil
}

// MarshalJSON writes what the user wrote when it still means the same
// duration, else the duration's canonical text; "Never" stays "Never".
func (d NillableDuration) MarshalJSON() ([]byte, error) {
	switch {
	case d.Duration != nil:
		if v, err := time.ParseDuration(d.Raw); err == nil && v == *d.Duration {
			return json.Marshal(d.Raw)
		}
		return json.Marshal(d.Duration.String())
	case d.Raw != "":
		return json.Marshal(d.Raw)
	default:
		return []byte("null"), nil
	}
}
