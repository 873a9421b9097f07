package testimage

import (
	"archive/tar"
	"bytes"
	"context"
	_ "crypto/sha256" // registers sha256 for go-digest
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

const (
	// BusyboxFile is the archive's file name in an output directory.
	BusyboxFile = "busybox-oci.tar"
	// BusyboxRef is the image name recorded in the archive's index.json
	// (org.opencontainers.image.ref.name and io.containerd.image.name).
	BusyboxRef = "docker.io/drover/busybox:test"
	// BusyboxPath is where the host's static busybox is read from.
	BusyboxPath = "/bin/busybox"
)

// ErrNoBusybox: the host has no /bin/busybox (apt-get install busybox-static).
var ErrNoBusybox = errors.New("no /bin/busybox on this host (apt-get install busybox-static)")

// fixed mtime so the same busybox always yields the same digests, and a
// re-import of the archive is a no-op for containerd.
var epoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// fallbackApplets are linked when `busybox --list` cannot be run.
var fallbackApplets = []string{
	"cat", "chmod", "cp", "date", "dd", "echo", "env", "false", "grep", "head",
	"hostname", "id", "kill", "ln", "ls", "mkdir", "mount", "mv", "nc", "ps",
	"pwd", "rm", "sh", "sleep", "stat", "tail", "test", "touch", "true", "wc",
	"wget", "yes",
}

// WriteBusyboxOCI writes outDir/busybox-oci.tar: a one-layer OCI image of
// the host's /bin/busybox with a symlink per applet in /bin, /etc/passwd
// and /etc/group (root, nobody), Cmd ["/bin/sh"]. It returns the path.
func WriteBusyboxOCI(ctx context.Context, outDir string) (string, error) {
	bb, err := os.ReadFile(BusyboxPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", ErrNoBusybox
		}
		return "", fmt.Errorf("read busybox: %w", err)
	}
	layer, err := busyboxLayer(ctx, bb)
	if err != nil {
		return "", err
	}
	layerDigest := digest.FromBytes(layer)

	cfg := ocispec.Image{
		Created:  &epoch,
		Platform: ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"},
		Config: ocispec.ImageConfig{
			Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			Cmd:        []string{"/bin/sh"},
			WorkingDir: "/",
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{layerDigest}},
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("marshal image config: %w", err)
	}
	manifest := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config: ocispec.Descriptor{
			MediaType: ocispec.MediaTypeImageConfig,
			Digest:    digest.FromBytes(cfgJSON),
			Size:      int64(len(cfgJSON)),
		},
		Layers: []ocispec.Descriptor{{
			MediaType: ocispec.MediaTypeImageLayer,
			Digest:    layerDigest,
			Size:      int64(len(layer)),
		}},
	}
	manJSON, err := json.Marshal(manifest)
	if err != nil {
		return "", fmt.Errorf("marshal manifest: %w", err)
	}
	index := ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{{
			MediaType: ocispec.MediaTypeImageManifest,
			Digest:    digest.FromBytes(manJSON),
			Size:      int64(len(manJSON)),
			Platform:  &ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"},
			Annotations: map[string]string{
				ocispec.AnnotationRefName:  BusyboxRef,
				"io.containerd.image.name": BusyboxRef,
			},
		}},
	}
	idxJSON, err := json.Marshal(index)
	if err != nil {
		return "", fmt.Errorf("marshal index: %w", err)
	}
	layout, _ := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})

	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	files := []struct {
		name string
		data []byte
	}{
		{ocispec.ImageLayoutFile, layout},
		{"index.json", idxJSON},
		{blobPath(layerDigest), layer},
		{blobPath(manifest.Config.Digest), cfgJSON},
		{blobPath(index.Manifests[0].Digest), manJSON},
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: epoch}); err != nil {
			return "", fmt.Errorf("write archive: %w", err)
		}
	}
	for _, f := range files {
		if err := writeFile(tw, f.name, 0o644, f.data); err != nil {
			return "", fmt.Errorf("write archive: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return "", fmt.Errorf("write archive: %w", err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", outDir, err)
	}
	dst := filepath.Join(outDir, BusyboxFile)
	tmp, err := os.CreateTemp(outDir, BusyboxFile+".*")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", dst, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out.Bytes()); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write %s: %w", dst, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write %s: %w", dst, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", dst, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", fmt.Errorf("write %s: %w", dst, err)
	}
	return dst, nil
}

func blobPath(d digest.Digest) string {
	return "blobs/" + d.Algorithm().String() + "/" + d.Encoded()
}

func writeFile(tw *tar.Writer, name string, mode int64, data []byte) error {
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch,
	}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// busyboxLayer is the uncompressed layer tar.
func busyboxLayer(ctx context.Context, bb []byte) ([]byte, error) {
	applets := fallbackApplets
	if out, err := exec.CommandContext(ctx, BusyboxPath, "--list").Output(); err == nil {
		applets = strings.Fields(string(out))
	}
	sort.Strings(applets)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := []struct {
		name string
		mode int64
	}{
		{"bin/", 0o755}, {"dev/", 0o755}, {"etc/", 0o755}, {"proc/", 0o555},
		{"root/", 0o700}, {"sys/", 0o555}, {"tmp/", 0o1777}, {"usr/", 0o755},
		{"usr/bin/", 0o755}, {"var/", 0o755},
	}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, ModTime: epoch}); err != nil {
			return nil, fmt.Errorf("write layer: %w", err)
		}
	}
	if err := writeFile(tw, "bin/busybox", 0o755, bb); err != nil {
		return nil, fmt.Errorf("write layer: %w", err)
	}
	for _, a := range applets {
		if a == "busybox" || strings.ContainsAny(a, "/ ") {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{
			Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, ModTime: epoch,
		}); err != nil {
			return nil, fmt.Errorf("write layer: %w", err)
		}
	}
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeSymlink, Name: "usr/bin/env", Linkname: "/bin/busybox", Mode: 0o777, ModTime: epoch,
	}); err != nil {
		return nil, fmt.Errorf("write layer: %w", err)
	}
	etc := []struct{ name, data string }{
		{"etc/passwd", "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"},
		{"etc/group", "root:x:0:\nnogroup:x:65534:\n"},
		{"etc/hostname", "busybox\n"},
	}
	for _, f := range etc {
		if err := writeFile(tw, f.name, 0o644, []byte(f.data)); err != nil {
			return nil, fmt.Errorf("write layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("write layer: %w", err)
	}
	return buf.Bytes(), nil
}

var (
	archiveOnce sync.Once
	archivePath string
	archiveErr  error
)

// BusyboxArchive returns the path of the busybox OCI archive for a test:
// $DROVER_TEST_IMAGES/busybox-oci.tar when it exists (make images),
// otherwise one built once per test process under os.TempDir(). Without
// /bin/busybox the test fails under CI=true and is skipped otherwise.
func BusyboxArchive(t testing.TB) string {
	t.Helper()
	p, err := BusyboxArchivePath(context.Background())
	if errors.Is(err, ErrNoBusybox) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatalf("busybox test image: %v", err)
	}
	return p
}

// BusyboxArchivePath is BusyboxArchive for callers without a testing.TB
// (e.g. an end-to-end test's TestMain): it returns the archive path,
// building it if needed.
func BusyboxArchivePath(ctx context.Context) (string, error) {
	if dir := os.Getenv("DROVER_TEST_IMAGES"); dir != "" {
		p := filepath.Join(dir, BusyboxFile)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	archiveOnce.Do(func() {
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("drover-testimage-%d", os.Getuid()))
		archivePath, archiveErr = WriteBusyboxOCI(ctx, dir)
	})
	return archivePath, archiveErr
}
