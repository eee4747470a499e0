package launch

import (
	"encoding/json"

	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/state"
)

// ReferencedTemplates are the launch templates the records' stored
// launches name (a re-drive sends them again): never deleted.
func ReferencedTemplates(records []*state.NodeClaim) map[string]bool {
	keep := map[string]bool{}
	for _, rec := range records {
		if len(rec.Launch) == 0 {
			continue
		}
		var p fleet.Plan
		if err := json.Unmarshal(rec.Launch, &p); err != nil {
			continue
		}
		for _, name := range p.TemplateNames() {
			keep[name] = true
		}
	}
	return keep
}
