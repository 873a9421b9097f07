package taskrunner

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"

	"github.com/drover/drover/api"
)

// RenderTemplates renders the task's templates into its task dir
// (taskDir = AllocDir/<task>, DestPath relative to it, as in Nomad:
// "local/app.conf"). A template is first ${...}-interpolated, then
// executed as a Go text/template with env, and a few string functions.
// Templates with Envvars add their KEY=VALUE lines to env (returned).
// Paths escaping the task dir are refused. svc (may be nil) answers
// nomadService lookups; a task runner's renders also answer nomadVar and
// nomadVarList (renderTemplates with a VarCache). changed lists the
// templates whose file content changed (all on a first render).
func RenderTemplates(tmpls []*api.Template, taskDir string, env map[string]string, node *api.Node, svc *ServiceCache) (map[string]string, error) {
	extra, _, err := renderTemplates(context.Background(), tmpls, taskDir, env, node, svc, nil)
	return extra, err
}

func renderTemplates(ctx context.Context, tmpls []*api.Template, taskDir string, env map[string]string, node *api.Node, svc *ServiceCache, vars *VarCache) (map[string]string, []*api.Template, error) {
	if len(tmpls) == 0 {
		return nil, nil, nil
	}
	root, err := os.OpenRoot(taskDir)
	if err != nil {
		return nil, nil, fmt.Errorf("open task dir: %w", err)
	}
	defer root.Close()
	extra := map[string]string{}
	var changed []*api.Template
	for i, t := range tmpls {
		src := t.EmbeddedTmpl
		if src == "" && t.SourcePath != "" {
			b, err := readIn(root, Interpolate(t.SourcePath, env, node))
			if err != nil {
				return nil, nil, fmt.Errorf("template %d: source %q: %w", i, t.SourcePath, err)
			}
			src = string(b)
		}
		out, err := renderOne(ctx, src, t, env, node, svc, vars)
		if err != nil {
			return nil, nil, fmt.Errorf("template %d (%s): %w", i, t.DestPath, err)
		}
		dest := path.Clean(strings.TrimPrefix(filepath.ToSlash(Interpolate(t.DestPath, env, node)), "/"))
		if dest == "." || dest == ".." || strings.HasPrefix(dest, "../") {
			return nil, nil, fmt.Errorf("template %d: destination %q escapes the task dir", i, t.DestPath)
		}
		perm := os.FileMode(0o644)
		if t.Perms != "" {
			p, err := strconv.ParseUint(t.Perms, 8, 32)
			if err != nil {
				return nil, nil, fmt.Errorf("template %d: perms %q: %w", i, t.Perms, err)
			}
			perm = os.FileMode(p)
		}
		if d := path.Dir(dest); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return nil, nil, fmt.Errorf("template %d: %w", i, err)
			}
		}
		if old, err := readIn(root, dest); err != nil || !bytes.Equal(old, out) {
			changed = append(changed, t)
			if err := writeIn(root, dest, out, perm); err != nil {
				return nil, nil, fmt.Errorf("template %d: %w", i, err)
			}
		}
		if t.Envvars {
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				k, v, ok := strings.Cut(line, "=")
				if ok {
					extra[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"`)
				}
			}
		}
	}
	return extra, changed, nil
}

// writeIn replaces dest (inside root) with out at perm.
func writeIn(root *os.Root, dest string, out []byte, perm os.FileMode) error {
	f, err := root.OpenFile(dest, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	_, werr := f.Write(out)
	cerr := f.Close()
	if err := root.Chmod(dest, perm); err != nil && werr == nil {
		werr = err
	}
	if werr != nil || cerr != nil {
		return fmt.Errorf("write %s: %w", dest, errorsJoin(werr, cerr))
	}
	return nil
}

func readIn(root *os.Root, name string) ([]byte, error) {
	f, err := root.Open(strings.TrimPrefix(name, "/"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 16<<20))
}

func renderOne(ctx context.Context, src string, t *api.Template, env map[string]string, node *api.Node, svc *ServiceCache, vars *VarCache) ([]byte, error) {
	left, right := t.LeftDelim, t.RightDelim
	if left == "" {
		left = "{{"
	}
	if right == "" {
		right = "}}"
	}
	src = Interpolate(src, env, node)
	funcs := template.FuncMap{
		"env": func(k string) string { return env[k] },
		"attr": func(k string) string {
			if node == nil {
				return ""
			}
			return node.Attributes[k]
		},
		"meta": func(k string) string {
			if node == nil {
				return ""
			}
			return node.Meta[k]
		},
		"toUpper":    strings.ToUpper,
		"toLower":    strings.ToLower,
		"trimSpace":  strings.TrimSpace,
		"split":      strings.Split,
		"join":       func(sep string, l []string) string { return strings.Join(l, sep) },
		"replaceAll": func(old, new, s string) string { return strings.ReplaceAll(s, old, new) },
		// nomadService lists the passing instances of a native service.
		"nomadService": func(name string) ([]*api.ServiceRegistration, error) {
			if svc == nil {
				return nil, fmt.Errorf("nomadService %q: no service lookup on this client", name)
			}
			return svc.get(ctx, name)
		},
		// nomadVar is the items of a variable ({{ .key }}, range);
		// nomadVarList the metadata of those under a prefix (.Path ...).
		"nomadVar": func(path string) (map[string]string, error) {
			if vars == nil {
				return nil, fmt.Errorf("nomadVar %q: no variable reads on this client", path)
			}
			return vars.get(ctx, path)
		},
		"nomadVarList": func(prefix ...string) ([]*api.VariableMetadata, error) {
			if vars == nil {
				return nil, fmt.Errorf("nomadVarList: no variable reads on this client")
			}
			if len(prefix) > 1 {
				return nil, fmt.Errorf("nomadVarList takes at most one prefix")
			}
			return vars.list(ctx, strings.Join(prefix, ""))
		},
	}
	tm, err := template.New("t").Delims(left, right).Funcs(funcs).Option("missingkey=zero").Parse(src)
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	var b bytes.Buffer
	if err := tm.Execute(&b, nil); err != nil {
		return nil, fmt.Errorf("execute: %w", err)
	}
	return b.Bytes(), nil
}

func errorsJoin(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
