package executor

import (
	"fmt"
	"os/user"
	"strconv"
	"strings"

	"github.com/drover/drover/drivers"
)

// UserDenylistOption is the client option listing the users exec tasks
// may not run as (Nomad's user.denylist), comma separated.
const UserDenylistOption = "user.denylist"

// DefaultUserDenylist applies when the client does not set the option; an
// explicitly set list (even "") replaces it, as in Nomad.
const DefaultUserDenylist = "root"

// UserDenylist parses the user.denylist client option.
func UserDenylist(clientOptions map[string]string) map[string]bool {
	list, ok := clientOptions[UserDenylistOption]
	if !ok {
		list = DefaultUserDenylist
	}
	out := map[string]bool{}
	for _, u := range strings.Split(list, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out[u] = true
		}
	}
	return out
}

// checkUser refuses a task user on the denylist, by the name given or by
// the name of its uid (so "0" or another name for uid 0 is root too).
func (d *Driver) checkUser(name string, uid uint32) error {
	if len(d.denied) == 0 {
		return nil
	}
	denied := d.denied[name]
	if !denied {
		if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil && d.denied[u.Username] {
			name, denied = fmt.Sprintf("%s (%s)", name, u.Username), true
		}
	}
	if denied {
		return fmt.Errorf("%s driver: %w: user %s is in the client's %s", d.name, drivers.ErrInvalidConfig, name, UserDenylistOption)
	}
	return nil
}
