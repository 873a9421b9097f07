package state

import (
	"fmt"

	"github.com/drover/drover/api"
)

// The allocs table, written twice per alloc on the hottest path (placed,
// then reported running), reads its indexed fields through typed
// accessors: memdb's StringFieldIndex and CompoundIndex look each field
// up by name through reflection, on every write of every index (~3% of
// a loaded leader's CPU). The keys are the ones those indexers build (a
// string and a 0 byte, per field), so lookups and order are unchanged.

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
	return true, stringKey(make([]byte, 0, len(v)+1+f.room), v, true), nil
}

func (f allocString) FromArgs(args ...any) ([]byte, error) {
	v, err := oneString(args)
	if err != nil {
		return nil, err
	}
	return stringKey(nil, v, true), nil
}

func (f allocString) PrefixFromArgs(args ...any) ([]byte, error) {
	v, err := oneString(args)
	if err != nil {
		return nil, err
	}
	return stringKey(nil, v, false), nil
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

// idRoom is the room for an alloc ID key: a UUID and its 0 byte.
const idRoom = 37
