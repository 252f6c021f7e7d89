package read

import (
	"fmt"
	"testing"
)

// The user memo only spares lookups: every record carries the IDs the string table gives its
// bytes, whether a user's IP, identity or object changed since its last event, or another
// user took its slot of the memo.
func TestUserMemoGivesTableIDs(t *testing.T) {
	in := newInterner()
	c := &converter{li: newLocalInterner(in)}
	// More users than memo slots, so slots are taken over; each user changes its IP, its
	// identity and the object it asks about from time to time.
	users := userMemoSlots + 300
	var rec Record
	for i := range 3 * users {
		u := i % users
		round := i / users
		user := fmt.Sprintf("system:node:node-%d", u)
		if u%3 == 0 {
			user = fmt.Sprintf("user-%d", u)
		}
		ip := fmt.Sprintf("10.0.%d.%d", u%7, round*(u%2))
		ident := fmt.Sprintf("i-%d-%d", u, round%2)
		name := fmt.Sprintf("node-%d", u+round*(u%5))
		line := fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"get","user":{"username":%q,"extra":{"sessionName":[%q]}},"sourceIPs":[%q],"objectRef":{"resource":"nodes","name":%q,"apiVersion":"v1"},"responseStatus":{"code":200},"stageTimestamp":"2024-04-05T06:00:00Z"}`,
			user, ident, ip, name)
		if res, _, err := c.convert([]byte(line), 0, &rec); res != convOK {
			t.Fatalf("event %d: %v %v", i, res, err)
		}
		want := func(s string) uint32 { return in.Intern([]byte(s)) }
		wantNode := uint32(0)
		if u%3 != 0 {
			wantNode = want(fmt.Sprintf("node-%d", u))
		}
		if rec.User != want(user) || rec.IP != want(ip) || rec.Ident != want(ident) || rec.Name != want(name) || rec.NodeOf != wantNode {
			t.Fatalf("event %d (user %s, ip %s, identity %s, name %s): record user %s, ip %s, identity %s, name %s, node %s", i, user, ip, ident, name,
				in.Str(rec.User), in.Str(rec.IP), in.Str(rec.Ident), in.Str(rec.Name), in.Str(rec.NodeOf))
		}
	}
}
