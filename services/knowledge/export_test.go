package knowledge

// CheckHandoff exposes the hand-off rules to the tests.
func (s *Service) CheckHandoff(in HandoffInput) (Handoff, error) { return s.checkHandoff(in) }
