package users

import (
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
)

// TestAUserThatWouldNotFitTheAuthSecretIsRefused: users are admitted oldest first while the
// users' file stays within its budget; the one that would pass it is refused with what to do,
// and a smaller one after it still fits. Without the budget, enough large ValkeyACLs pushed the
// auth Secret past the API server's 1 MiB and every turn stopped before deciding anything.
func TestAUserThatWouldNotFitTheAuthSecretIsRefused(t *testing.T) {
	big := func(name string) valkey.ACLUser {
		u := valkey.ACLUser{Name: name, Enabled: true}
		for i := 0; i < 256; i++ { // the API's most: 256 rules of 512 bytes
			u.Rules = append(u.Rules, "~"+strings.Repeat("k", 511))
		}
		return u
	}
	var f usersFile
	admitted := 0
	for i := 0; i < 8; i++ {
		u := big("app" + string(rune('a'+i)))
		if !f.fits(u) {
			if msg := f.overflow(u); !strings.Contains(msg, "1 MiB") || !strings.Contains(msg, "shorten the rules") {
				t.Errorf("refusal %q does not say why and what to do", msg)
			}
			break
		}
		f.add(u)
		admitted++
	}
	if admitted == 0 || admitted == 8 {
		t.Fatalf("%d of 8 maximal users admitted: the budget must admit some and refuse the rest", admitted)
	}
	if f.size > usersFileBudget || usersFileBudget+64<<10 > 1<<20 {
		t.Errorf("users' file %d bytes, budget %d: the Secret's other keys need room under 1 MiB", f.size, usersFileBudget)
	}
	small := valkey.ACLUser{Name: "small", Enabled: true, Rules: []string{"~s:*", "+@read"}}
	if !f.fits(small) {
		t.Error("a small user after a refused big one must still fit")
	}
}
