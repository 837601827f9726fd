package celtest

import "testing"

func TestSmoke(t *testing.T) { apiServer(t) }
