package resp

// Fields reads a reply of field and value pairs (SENTINEL MASTER's, HELLO's in RESP2) as a
// map; what is not such a reply gives an empty map.
func Fields(v any) map[string]string {
	out := map[string]string{}
	a, _ := v.([]any)
	for i := 0; i+1 < len(a); i += 2 {
		k, _ := a[i].(string)
		val, _ := a[i+1].(string)
		out[k] = val
	}
	return out
}
