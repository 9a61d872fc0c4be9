package tools

import "fmt"

// DescriptionBudget caps each tool description and each parameter
// description, in bytes (docs/tools.md, "The description budget").
const DescriptionBudget = 200

// ParamCapExemptions is the one list of parameters allowed past the budget,
// keyed "tool.param", with their own cap; an entry that is no longer needed
// fails CheckBudget. team_handoff.packet states the whole TaskPacket shape:
// a packet is rejected whole when it does not fit that shape, so a model
// that cannot see the shape cannot hand off at all.
var ParamCapExemptions = map[string]int{"team_handoff.packet": 1024}

// CheckBudget returns every budget violation in reg under exemptions, and
// every exemption that stopped being needed (its parameter is gone or fits
// the budget). The whole-registry test asserts it returns nothing.
func CheckBudget(reg *Registry, exemptions map[string]int) []string {
	var problems []string
	used := map[string]bool{}
	for _, t := range reg.All() {
		if n := len(t.Description); n > DescriptionBudget {
			problems = append(problems, fmt.Sprintf("%s: description is %d bytes, budget %d", t.Name, n, DescriptionBudget))
		}
		for _, p := range t.Params {
			key := t.Name + "." + p.Name
			limit, exempt := exemptions[key]
			if !exempt {
				limit = DescriptionBudget
			}
			n := len(p.Description)
			if n > limit {
				problems = append(problems, fmt.Sprintf("%s: description is %d bytes, budget %d", key, n, limit))
			}
			if exempt && n > DescriptionBudget {
				used[key] = true
			}
		}
	}
	for key := range exemptions {
		if !used[key] {
			problems = append(problems, fmt.Sprintf("%s: exemption no longer needed (parameter gone or within %d bytes); remove it", key, DescriptionBudget))
		}
	}
	return problems
}
