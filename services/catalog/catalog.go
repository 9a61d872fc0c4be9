// Package catalog assembles Visor's whole tool registry from every family.
// A family contributes a Register(*tools.Registry) method; adding one here is
// all it takes for tools/list, tools/call, the policy and the description
// budget test to cover it.
package catalog

import (
	"github.com/visorhq/visor/services/tools"
)

// Family is anything that declares tools.
type Family interface {
	Register(reg *tools.Registry)
}

// New returns a registry holding every family's tools. It panics on a
// malformed declaration or a deprecated alias without a target, which the
// catalog test catches first.
func New(families ...Family) *tools.Registry {
	reg := tools.NewRegistry()
	for _, f := range families {
		f.Register(reg)
	}
	if err := reg.CheckAliases(); err != nil {
		panic(err)
	}
	return reg
}

// FamilyFunc adapts a registering function to Family.
type FamilyFunc func(reg *tools.Registry)

// Register calls f.
func (f FamilyFunc) Register(reg *tools.Registry) { f(reg) }
