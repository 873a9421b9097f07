package testimage

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

// Builder writes one family of test images into an output directory.
type Builder struct {
	// Name is what mkimages' -only flag selects ("busybox", "vm").
	Name string
	// Help is a one-line description for mkimages -h.
	Help string
	// Build writes the images into outDir (which exists) and returns the
	// paths it wrote.
	Build func(ctx context.Context, outDir string) ([]string, error)
}

var (
	registryMu sync.Mutex
	registry   = map[string]Builder{}
)

// Register adds a builder; call it from an init function. A duplicate
// name panics (a programming error).
func Register(b Builder) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[b.Name]; dup {
		panic(fmt.Sprintf("testimage: builder %q registered twice", b.Name))
	}
	registry[b.Name] = b
}

// Builders returns the registered builders sorted by name.
func Builders() []Builder {
	registryMu.Lock()
	defer registryMu.Unlock()
	out := make([]Builder, 0, len(registry))
	for _, b := range registry {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func init() {
	Register(Builder{
		Name: "busybox",
		Help: "busybox-oci.tar: an OCI image archive of the host's /bin/busybox",
		Build: func(ctx context.Context, outDir string) ([]string, error) {
			p, err := WriteBusyboxOCI(ctx, outDir)
			if err != nil {
				return nil, err
			}
			return []string{p}, nil
		},
	})
}
