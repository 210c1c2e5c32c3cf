package seal

// Purposes returns a copy of the purposes s was created with, in their original order.
func (s *Sealer) Purposes() []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.purposes...)
}
