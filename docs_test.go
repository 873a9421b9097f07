package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink is a Markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinksStayInRepo: every relative link of the README and docs/
// names a file or directory of this repository (not ../shared/...,
// outside it), so a fresh clone's links resolve.
func TestDocLinksStayInRepo(t *testing.T) {
	docs, _ := filepath.Glob("docs/*.md")
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range append([]string{"README.md"}, docs...) {
		src, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(src), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			p, err := filepath.Abs(filepath.Join(filepath.Dir(doc), target))
			if err != nil {
				t.Fatal(err)
			}
			if rel, err := filepath.Rel(root, p); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				t.Errorf("%s links %s, outside the repository", doc, m[1])
				continue
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links %s: %v", doc, m[1], err)
			}
		}
	}
}

// TestDesignNamesEveryPackage: docs/DESIGN.md, the architecture doc the
// README points at, mentions every package directory by name, so it
// stays current with the layout.
func TestDesignNamesEveryPackage(t *testing.T) {
	design, err := os.ReadFile("docs/DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", "build", "bin", "node_modules", ".git", ".gl":
				return filepath.SkipDir
			}
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || dir == "." || seen[dir] {
			return nil
		}
		seen[dir] = true
		if !strings.Contains(string(design), filepath.Base(dir)) {
			t.Errorf("docs/DESIGN.md does not mention package %s", dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 40 {
		t.Fatalf("found %d packages, want the whole tree", len(seen))
	}
}
