package testimage

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func readArchive(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = b
	}
}

// The archive is a valid OCI layout: every blob matches its digest, the
// index names the image, the config's diff_id is the layer's digest, and
// the layer holds busybox with /bin/sh.
func TestBusyboxArchiveIsValidOCI(t *testing.T) {
	if _, err := os.Stat(BusyboxPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(ErrNoBusybox)
		}
		t.Skip(ErrNoBusybox)
	}
	dir := t.TempDir()
	p, err := WriteBusyboxOCI(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	files := readArchive(t, p)
	blob := func(d digest.Digest) []byte {
		t.Helper()
		b, ok := files["blobs/sha256/"+d.Encoded()]
		if !ok {
			t.Fatalf("blob %s missing", d)
		}
		if got := digest.FromBytes(b); got != d {
			t.Fatalf("blob %s has digest %s", d, got)
		}
		return b
	}
	var layout ocispec.ImageLayout
	if err := json.Unmarshal(files[ocispec.ImageLayoutFile], &layout); err != nil || layout.Version != ocispec.ImageLayoutVersion {
		t.Fatalf("oci-layout %q: %v", files[ocispec.ImageLayoutFile], err)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Manifests) != 1 || idx.Manifests[0].Annotations[ocispec.AnnotationRefName] != BusyboxRef {
		t.Fatalf("index %+v, want one manifest named %s", idx, BusyboxRef)
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(blob(idx.Manifests[0].Digest), &man); err != nil {
		t.Fatal(err)
	}
	var cfg ocispec.Image
	if err := json.Unmarshal(blob(man.Config.Digest), &cfg); err != nil {
		t.Fatal(err)
	}
	if len(man.Layers) != 1 || len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != man.Layers[0].Digest {
		t.Fatalf("layers %+v, diff_ids %v", man.Layers, cfg.RootFS.DiffIDs)
	}
	layer := tar.NewReader(bytes.NewReader(blob(man.Layers[0].Digest)))
	found := map[string]string{}
	for {
		h, err := layer.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		found[h.Name] = h.Linkname
	}
	if _, ok := found["bin/busybox"]; !ok || found["bin/sh"] != "busybox" {
		t.Fatalf("layer lacks bin/busybox or the bin/sh link: %v", found["bin/sh"])
	}
	// Deterministic: a second build is byte-identical.
	p2, err := WriteBusyboxOCI(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(p)
	b, _ := os.ReadFile(p2)
	if !bytes.Equal(a, b) {
		t.Error("two builds differ")
	}
}

func TestBuildersRegistry(t *testing.T) {
	var names []string
	for _, b := range Builders() {
		names = append(names, b.Name)
	}
	found := false
	for _, n := range names {
		found = found || n == "busybox"
	}
	if !found {
		t.Fatalf("builders %v lack busybox", names)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a duplicate builder did not panic")
		}
	}()
	Register(Builder{Name: "busybox"})
}
