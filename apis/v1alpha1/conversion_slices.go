package v1alpha1

// convertSlice converts every element of in with f, keeping nil nil (and empty empty), so
// that a round trip gives back the same slice.
func convertSlice[A, B any](in []A, f func(A) B) []B {
	if in == nil {
		return nil
	}
	out := make([]B, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// convertMap converts every value of in with f, keeping nil nil.
func convertMap[K comparable, A, B any](in map[K]A, f func(A) B) map[K]B {
	if in == nil {
		return nil
	}
	out := make(map[K]B, len(in))
	for k, v := range in {
		out[k] = f(v)
	}
	return out
}

// cast is the identity conversion between two types of the same underlying type: the
// compiler checks that they still are, so a field added to one version only breaks the
// build here rather than being dropped silently.
func cast[B, A ~string](a A) B { return B(a) }
