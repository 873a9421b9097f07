package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	containerd "github.com/containerd/containerd"
	"github.com/containerd/containerd/images"
	"github.com/containerd/containerd/remotes/docker"
	"github.com/containerd/platforms"
	"github.com/distribution/reference"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/drover/drover/drivers"
)

// ArchivePrefix marks an image loaded from a local OCI archive.
const ArchivePrefix = "oci-archive://"

// archivePath returns the host path of an archive image reference, or ""
// when image is a registry reference. "oci-archive:///abs/path.tar" is
// used as is; a relative "oci-archive://local/x.tar" or a bare relative
// path ending in .tar is resolved inside the task dir, then the alloc dir.
func archivePath(image string, cfg *drivers.TaskConfig) (string, error) {
	p, isArchive := strings.CutPrefix(image, ArchivePrefix)
	if !isArchive {
		if !strings.HasSuffix(image, ".tar") || strings.Contains(image, ":") {
			return "", nil
		}
		p = image
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	clean := filepath.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%w: image: archive path %q leaves the alloc dir", drivers.ErrInvalidConfig, p)
	}
	for _, base := range []string{cfg.TaskDir, cfg.AllocDir} {
		if base == "" {
			continue
		}
		cand := filepath.Join(base, clean)
		if _, err := os.Stat(cand); err == nil {
			return cand, nil
		}
	}
	return "", fmt.Errorf("%w: image: archive %q not found in the task or alloc dir", drivers.ErrInvalidConfig, p)
}

// image returns the task's image, unpacked into the snapshotter: imported
// from an archive or pulled (with progress events) when not present.
func (d *Driver) image(ctx context.Context, c *containerd.Client, cfg *drivers.TaskConfig, tc *TaskConfig) (containerd.Image, error) {
	path, err := archivePath(tc.Image, cfg)
	if err != nil {
		return nil, err
	}
	if path != "" {
		return d.archiveImage(ctx, c, cfg.ID, path)
	}
	img, err := d.pull(ctx, c, cfg.ID, tc)
	if err != nil {
		return nil, err
	}
	return d.unpack(ctx, img, cfg.ID)
}

// archiveImage imports and unpacks an archive once for all the tasks
// that ask for the same file version at the same time. When the task
// that ran the import was cancelled, a waiting task still alive tries
// again itself.
func (d *Driver) archiveImage(ctx context.Context, c *containerd.Client, taskID, path string) (containerd.Image, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: image: stat archive: %v", drivers.ErrInvalidConfig, err)
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", path, st.Size(), st.ModTime().UnixNano())
	for {
		ran := false
		v, err, _ := d.archives.Do(key, func() (any, error) {
			ran = true
			img, err := d.importArchive(ctx, c, taskID, path)
			if err != nil {
				return nil, err
			}
			return d.unpack(ctx, img, taskID)
		})
		if err != nil && !ran && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			continue // the importing task's context ended, not ours
		}
		if err != nil {
			return nil, err
		}
		return v.(containerd.Image), nil
	}
}

// unpack unpacks img into the snapshotter unless it already is.
func (d *Driver) unpack(ctx context.Context, img containerd.Image, taskID string) (containerd.Image, error) {
	unpacked, err := img.IsUnpacked(ctx, Snapshotter)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", img.Name(), err)
	}
	if !unpacked {
		d.emit(taskID, "unpacking image %s", img.Name())
		if err := img.Unpack(ctx, Snapshotter); err != nil {
			return nil, fmt.Errorf("unpack image %s: %w", img.Name(), err)
		}
	}
	return img, nil
}

// archiveKey identifies an archive file version for the import cache.
type archiveKey struct {
	path  string
	size  int64
	mtime time.Time
}

func (d *Driver) importArchive(ctx context.Context, c *containerd.Client, taskID, path string) (containerd.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: image: open archive: %v", drivers.ErrInvalidConfig, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: image: stat archive: %v", drivers.ErrInvalidConfig, err)
	}
	key := archiveKey{path: path, size: st.Size(), mtime: st.ModTime()}
	d.importMu.Lock()
	name, seen := d.imported[key]
	d.importMu.Unlock()
	if seen {
		// The same file was imported before: reuse the image unless it
		// was removed from the daemon since.
		if img, err := c.GetImage(ctx, name); err == nil {
			return img, nil
		}
	}
	d.emit(taskID, "importing image archive %s", path)
	matcher := platforms.Default()
	imgs, err := c.Import(ctx, f,
		containerd.WithImportPlatform(matcher),
		containerd.WithDigestRef(func(dg digest.Digest) string { return "drover.local/oci-archive@" + dg.String() }),
		containerd.WithSkipDigestRef(func(name string) bool { return name != "" }))
	if err != nil {
		return nil, fmt.Errorf("import image archive %s: %w", path, err)
	}
	for _, im := range imgs {
		if im.Target.MediaType == ocispec.MediaTypeImageIndex || im.Target.MediaType == images.MediaTypeDockerSchema2ManifestList {
			continue
		}
		if im.Target.Platform != nil && !matcher.Match(*im.Target.Platform) {
			continue
		}
		d.importMu.Lock()
		d.imported[key] = im.Name
		d.importMu.Unlock()
		return containerd.NewImageWithPlatform(c, im, matcher), nil
	}
	return nil, fmt.Errorf("%w: image: archive %s holds no image for %s", drivers.ErrInvalidConfig, path, platforms.DefaultString())
}

func (d *Driver) pull(ctx context.Context, c *containerd.Client, taskID string, tc *TaskConfig) (containerd.Image, error) {
	ref := tc.Image
	if img, err := c.GetImage(ctx, ref); err == nil {
		return img, nil
	}
	if named, err := normalize(ref); err == nil && named != ref {
		if img, err := c.GetImage(ctx, named); err == nil {
			return img, nil
		}
		ref = named
	}
	// A registry on the loopback interface speaks plain HTTP (as Docker
	// treats localhost); every other registry is reached over TLS.
	hostOpts := []docker.RegistryOpt{docker.WithPlainHTTP(docker.MatchLocalhost)}
	if tc.Auth != nil {
		user, pass := tc.Auth.Username, tc.Auth.Password
		hostOpts = append(hostOpts, docker.WithAuthorizer(docker.NewDockerAuthorizer(
			docker.WithAuthCreds(func(string) (string, string, error) { return user, pass, nil }))))
	}
	resolver := docker.NewResolver(docker.ResolverOptions{Hosts: docker.ConfigureDefaultRegistries(hostOpts...)})
	start := time.Now()
	d.emit(taskID, "pulling image %s", ref)
	progress := images.HandlerFunc(func(_ context.Context, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
		if images.IsLayerType(desc.MediaType) {
			d.emit(taskID, "pulling layer %s (%d bytes)", desc.Digest.Encoded()[:12], desc.Size)
		}
		return nil, nil
	})
	img, err := c.Pull(ctx, ref,
		containerd.WithResolver(resolver),
		containerd.WithPlatformMatcher(platforms.Default()),
		containerd.WithPullUnpack,
		containerd.WithPullSnapshotter(Snapshotter),
		containerd.WithImageHandler(progress))
	if err != nil {
		return nil, fmt.Errorf("pull image %s: %w", ref, err)
	}
	d.emit(taskID, "pulled image %s in %s", ref, time.Since(start).Round(time.Millisecond))
	return img, nil
}

// normalize turns "busybox" into "docker.io/library/busybox:latest".
func normalize(ref string) (string, error) {
	n, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", err
	}
	return n.String(), nil
}
