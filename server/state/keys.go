package state

import (
	"fmt"

	"github.com/drover/drover/api"
)

// The allocs table, written twice per alloc on the hottest path (placed,
// then reported running), reads its indexed fields through typed
// accessors: memdb's StringFieldIndex and CompoundIndex look each field
// up by name through reflection, on every write of every index (it
// shows in BenchmarkC1M's CPU profile of the leader, DROVER_BENCH_PPROF).
//
// Its IDs (alloc, node, deployment) are UUIDs the servers make: lowercase
// 8-4-4-4-12. Their keys hold the 16 bytes, not the 36 characters, so the
// radix trees branch on whole bytes: a path from the root to one of
// 1,000,000 allocs is ~3 levels of up to 256 instead of ~6 of up to 16,
// and each write copies half as many nodes (memdb copies the path). Every
// alloc key carries the alloc ID (memdb appends it to the keys of an index
// that is not unique), so all three indexes gain. Any other ID (tests,
// hand-made ones, a UUID in capitals) keeps its text. Within each kind
// keys sort as the IDs' text does; text keys sort before UUID keys, and
// AllocsByIDPrefix merges the two to list in ID order.

// Key tags: what follows is text and a 0 byte, or 16 bytes of UUID.
const (
	keyText = 0x00
	keyUUID = 0x01
)

// idKey appends the key of an ID.
func idKey(k []byte, id string) []byte {
	if u, ok := parseUUID(id); ok {
		k = append(k, keyUUID)
		return append(k, u[:]...)
	}
	return stringKey(append(k, keyText), id, true)
}

// uuidDash reports whether position i of a canonical UUID is a dash.
func uuidDash(i int) bool { return i == 8 || i == 13 || i == 18 || i == 23 }

// parseUUID decodes a lowercase canonical UUID.
func parseUUID(s string) (u [16]byte, ok bool) {
	if len(s) != 36 {
		return u, false
	}
	_, ok = appendUUID(u[:0], s)
	return u, ok
}

// uuidPrefix decodes the whole bytes of a prefix of a lowercase canonical
// UUID (an odd last digit is left out); ok is false when no such UUID
// starts with p.
func uuidPrefix(p string) (b []byte, ok bool) {
	return appendUUID(make([]byte, 0, 16), p)
}

// appendUUID appends uuidPrefix's bytes to b.
func appendUUID(b []byte, p string) ([]byte, bool) {
	if len(p) > 36 {
		return nil, false
	}
	var hi byte
	half := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if uuidDash(i) {
			if c != '-' {
				return nil, false
			}
			continue
		}
		var v byte
		switch {
		case '0' <= c && c <= '9':
			v = c - '0'
		case 'a' <= c && c <= 'f':
			v = c - 'a' + 10
		default:
			return nil, false
		}
		if half {
			b = append(b, hi<<4|v)
		} else {
			hi = v
		}
		half = !half
	}
	return b, true
}

// keyPrefix is a key prefix built by the caller, which PrefixFromArgs
// takes as it is.
type keyPrefix []byte

// allocString indexes one string field of an alloc ("": not indexed).
// room is the capacity its keys leave after them: memdb appends the
// alloc's ID key to the keys of an index that is not unique.
type allocString struct {
	get  func(a *api.Allocation) string
	room int
}

func (f allocString) FromObject(obj any) (bool, []byte, error) {
	a, ok := obj.(*api.Allocation)
	if !ok {
		return false, nil, fmt.Errorf("object of type %T is not an alloc", obj)
	}
	v := f.get(a)
	if v == "" {
		return false, nil, nil
	}
	return true, idKey(make([]byte, 0, idRoom+f.room), v), nil
}

func (f allocString) FromArgs(args ...any) ([]byte, error) {
	v, err := oneString(args)
	if err != nil {
		return nil, err
	}
	return idKey(nil, v), nil
}

// PrefixFromArgs takes a keyPrefix: a text prefix may match keys of both
// kinds, which no one prefix of bytes covers (see AllocsByIDPrefix).
func (f allocString) PrefixFromArgs(args ...any) ([]byte, error) {
	if len(args) == 1 {
		if p, ok := args[0].(keyPrefix); ok {
			return p, nil
		}
	}
	return nil, fmt.Errorf("an alloc index prefix is a keyPrefix, got %v", args)
}

// allocJob indexes an alloc by namespace and job ID, as nsKey does.
type allocJob struct{}

func (allocJob) FromObject(obj any) (bool, []byte, error) {
	a, ok := obj.(*api.Allocation)
	if !ok {
		return false, nil, fmt.Errorf("object of type %T is not an alloc", obj)
	}
	if a.Namespace == "" || a.JobID == "" {
		return false, nil, nil
	}
	k := make([]byte, 0, len(a.Namespace)+len(a.JobID)+2+idRoom)
	return true, stringKey(stringKey(k, a.Namespace, true), a.JobID, true), nil
}

func (allocJob) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("a job lookup takes a namespace and a job ID, got %d arguments", len(args))
	}
	ns, ok1 := args[0].(string)
	job, ok2 := args[1].(string)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("a job lookup takes two strings, got %T and %T", args[0], args[1])
	}
	return stringKey(stringKey(nil, ns, true), job, true), nil
}

// stringKey appends v to k, and with end the 0 byte that ends it.
func stringKey(k []byte, v string, end bool) []byte {
	k = append(k, v...)
	if end {
		k = append(k, 0)
	}
	return k
}

func oneString(args []any) (string, error) {
	if len(args) != 1 {
		return "", fmt.Errorf("must provide only a single argument, got %d", len(args))
	}
	v, ok := args[0].(string)
	if !ok {
		return "", fmt.Errorf("argument must be a string: %#v", args[0])
	}
	return v, nil
}

// idRoom is the room for a UUID's key: its tag and 16 bytes.
const idRoom = 17
