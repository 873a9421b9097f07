package taskrunner

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/drover/drover/api"
)

// FetchArtifacts downloads the task's artifacts into its task dir
// (taskDir = AllocDir/<task>; RelativeDest defaults to "local/"). Only
// http and https sources are supported; archives are not unpacked. A
// "checksum" getter option ("sha256:<hex>" or "sha512:<hex>") is
// verified. Destinations escaping the task dir are refused.
func FetchArtifacts(ctx context.Context, arts []*api.TaskArtifact, taskDir string, env map[string]string, node *api.Node) error {
	if len(arts) == 0 {
		return nil
	}
	root, err := os.OpenRoot(taskDir)
	if err != nil {
		return fmt.Errorf("open task dir: %w", err)
	}
	defer root.Close()
	for i, a := range arts {
		if err := fetchOne(ctx, root, a, env, node); err != nil {
			return fmt.Errorf("artifact %d (%s): %w", i, a.GetterSource, err)
		}
	}
	return nil
}

func fetchOne(ctx context.Context, root *os.Root, a *api.TaskArtifact, env map[string]string, node *api.Node) error {
	src := Interpolate(a.GetterSource, env, node)
	u, err := url.Parse(src)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("unsupported source scheme %q (only http and https)", u.Scheme)
	}
	var sum hash.Hash
	var want string
	if cs := a.GetterOptions["checksum"]; cs != "" {
		algo, hexsum, ok := strings.Cut(cs, ":")
		switch {
		case !ok:
			return fmt.Errorf("checksum %q: want <algo>:<hex>", cs)
		case algo == "sha256":
			sum = sha256.New()
		case algo == "sha512":
			sum = sha512.New()
		default:
			return fmt.Errorf("checksum algorithm %q not supported (sha256, sha512)", algo)
		}
		want = strings.ToLower(hexsum)
	}
	dest := a.RelativeDest
	if dest == "" {
		dest = "local/"
	}
	dest = Interpolate(dest, env, node)
	name := path.Base(u.Path)
	if name == "/" || name == "." || name == "" {
		name = "artifact"
	}
	target := strings.TrimPrefix(dest, "/")
	if strings.HasSuffix(dest, "/") || a.GetterMode == "dir" {
		target = path.Join(target, name)
	}
	target = path.Clean(target)
	if target == "." || target == ".." || strings.HasPrefix(target, "../") {
		return fmt.Errorf("destination %q escapes the task dir", a.RelativeDest)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return err
	}
	for k, v := range a.GetterHeaders {
		req.Header.Set(k, Interpolate(v, env, node))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("download: status %s", resp.Status)
	}
	if d := path.Dir(target); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	tmp := target + ".part"
	f, err := root.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	var w io.Writer = f
	if sum != nil {
		w = io.MultiWriter(f, sum)
	}
	_, cerr := io.Copy(w, resp.Body)
	if err := f.Close(); cerr == nil {
		cerr = err
	}
	if cerr != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("download: %w", cerr)
	}
	if sum != nil {
		if got := hex.EncodeToString(sum.Sum(nil)); got != want {
			_ = root.Remove(tmp)
			return fmt.Errorf("checksum mismatch: got %s, want %s", got, want)
		}
	}
	return root.Rename(tmp, target)
}

// WritePayload writes a dispatched job's payload to local/<file>.
func WritePayload(taskDir string, cfg *api.DispatchPayloadConfig, payload []byte) error {
	if cfg == nil || cfg.File == "" || len(payload) == 0 {
		return nil
	}
	root, err := os.OpenRoot(taskDir)
	if err != nil {
		return fmt.Errorf("open task dir: %w", err)
	}
	defer root.Close()
	p := path.Clean(path.Join("local", cfg.File))
	if !strings.HasPrefix(p, "local/") {
		return fmt.Errorf("dispatch payload file %q escapes the task dir", cfg.File)
	}
	if d := path.Dir(p); d != "local" {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return root.WriteFile(p, payload, 0o644)
}
