// Package golden compares test output with files under a package's testdata directory, and
// rewrites them when the test binary runs with -update. Only tests import it.
package golden
