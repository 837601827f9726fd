package localcluster

import "testing"

// TestLookupImageByVersion: the image as written wins, then its major.minor, then the
// repository: valkey/valkey:9.1.2 and :9.1 run the 9.1 build, :8.0 and :latest the default.
func TestLookupImageByVersion(t *testing.T) {
	images := map[string]Image{
		"valkey/valkey":       {Entrypoint: []string{"default"}},
		"valkey/valkey:9.1":   {Entrypoint: []string{"nine-one"}},
		"valkey/valkey:7.2.4": {Entrypoint: []string{"exact"}},
	}
	for image, want := range map[string]string{
		"valkey/valkey:9.1":            "nine-one",
		"valkey/valkey:9.1.2":          "nine-one",
		"valkey/valkey:9.1.2@sha256:0": "nine-one",
		"valkey/valkey:8.0":            "default",
		"valkey/valkey:latest":         "default",
		"valkey/valkey":                "default",
		"valkey/valkey:7.2.4":          "exact",
		"valkey/valkey:9.10":           "default",
	} {
		img, ok := lookupImage(images, image)
		if !ok || img.Entrypoint[0] != want {
			t.Errorf("%s: %v %v, want %s", image, img.Entrypoint, ok, want)
		}
	}
	if _, ok := lookupImage(images, "busybox:1"); ok {
		t.Error("an image with no mapping was found")
	}
}
