package qemu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/drover/drover/drivers"
)

// ErrPathNotAllowed: an image, kernel, initrd or drive path (or a backing
// file of an image) lies outside the alloc dir and the client's
// image_paths. It wraps drivers.ErrInvalidConfig.
var ErrPathNotAllowed = fmt.Errorf("%w: path not allowed", drivers.ErrInvalidConfig)

// pathPolicy decides which host files a task may hand to qemu.
type pathPolicy struct {
	// base resolves relative paths (the task dir).
	base string
	// roots are the allowed directories, symlinks resolved.
	roots []string
}

// newPathPolicy allows allocDir and the configured image paths. Roots
// that do not exist are ignored.
func newPathPolicy(taskDir, allocDir string, imagePaths []string) *pathPolicy {
	p := &pathPolicy{base: taskDir}
	for _, r := range append([]string{allocDir}, imagePaths...) {
		if r == "" || !filepath.IsAbs(r) {
			continue
		}
		if real, err := filepath.EvalSymlinks(r); err == nil {
			p.roots = append(p.roots, real)
		}
	}
	return p
}

// resolve turns key's path into an absolute, symlink-free path of an
// existing regular file inside an allowed root. Paths with ".." are
// rejected outright; relative paths are relative to the task dir.
func (p *pathPolicy) resolve(key, path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("%w: %q is empty", drivers.ErrInvalidConfig, key)
	}
	for _, el := range strings.Split(filepath.ToSlash(path), "/") {
		if el == ".." {
			return "", fmt.Errorf("%w: %q: %q contains \"..\"", ErrPathNotAllowed, key, path)
		}
	}
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(p.base, abs)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", drivers.ErrInvalidConfig, key, err)
	}
	if !p.allowed(real) {
		return "", fmt.Errorf("%w: %q: %s (resolved %s) is outside the alloc dir and the client's image_paths", ErrPathNotAllowed, key, path, real)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", drivers.ErrInvalidConfig, key, err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %q: %s is not a regular file", drivers.ErrInvalidConfig, key, real)
	}
	return real, nil
}

// allowed reports whether the resolved path lies in an allowed root.
func (p *pathPolicy) allowed(real string) bool {
	for _, r := range p.roots {
		if real == r || strings.HasPrefix(real, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// imageInfo is the part of `qemu-img info --output=json` drover reads.
type imageInfo struct {
	Filename            string `json:"filename"`
	Format              string `json:"format"`
	BackingFilename     string `json:"backing-filename"`
	FullBackingFilename string `json:"full-backing-filename"`
	FormatSpecific      struct {
		Data struct {
			DataFile string `json:"data-file"`
		} `json:"data"`
	} `json:"format-specific"`
}

// inspectImage returns the image's format (the one given, or detected)
// after checking that no file of its backing chain, nor an external data
// file, lies outside the allowed roots: a qcow2 header could otherwise
// make qemu read any host file.
func (p *pathPolicy) inspectImage(ctx context.Context, qemuImg, key, path, format string) (string, error) {
	args := []string{"info", "--output=json", "--backing-chain", "-U"}
	if format != "" {
		args = append(args, "-f", format)
	}
	out, err := exec.CommandContext(ctx, qemuImg, append(args, path)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("%w: %q: qemu-img info %s: %s", drivers.ErrInvalidConfig, key, path, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("qemu-img info %s: %w", path, err)
	}
	var chain []imageInfo
	if err := json.Unmarshal(out, &chain); err != nil || len(chain) == 0 {
		return "", fmt.Errorf("qemu-img info %s: unexpected output %q", path, out)
	}
	top := chain[0]
	if top.Format != "qcow2" && top.Format != "raw" {
		return "", fmt.Errorf("%w: %q: %s is a %s image; qcow2 or raw are supported", drivers.ErrInvalidConfig, key, path, top.Format)
	}
	for _, img := range chain {
		for _, f := range []string{img.Filename, img.FullBackingFilename, img.FormatSpecific.Data.DataFile} {
			if f == "" {
				continue
			}
			if strings.Contains(f, ":") && !filepath.IsAbs(f) {
				return "", fmt.Errorf("%w: %q: %s refers to %q, not a local file", ErrPathNotAllowed, key, path, f)
			}
			abs := f
			if !filepath.IsAbs(abs) {
				abs = filepath.Join(filepath.Dir(img.Filename), f)
			}
			real, err := filepath.EvalSymlinks(abs)
			if err != nil {
				return "", fmt.Errorf("%w: %q: %s refers to %s: %v", drivers.ErrInvalidConfig, key, path, f, err)
			}
			if !p.allowed(real) {
				return "", fmt.Errorf("%w: %q: %s refers to %s, outside the alloc dir and the client's image_paths", ErrPathNotAllowed, key, path, real)
			}
		}
	}
	return top.Format, nil
}

// overlay creates dst, a qcow2 whose backing file is the image, so that
// the VM's writes never reach the image.
func overlay(ctx context.Context, qemuImg, image, format, dst string) error {
	out, err := exec.CommandContext(ctx, qemuImg, "create", "-q", "-f", "qcow2", "-b", image, "-F", format, dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("qemu-img create overlay %s: %v: %s", dst, err, strings.TrimSpace(string(out)))
	}
	return nil
}
