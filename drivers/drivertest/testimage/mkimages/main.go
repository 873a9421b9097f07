package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/drover/drover/drivers/drivertest/testimage"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:]))
}

func run(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("mkimages", flag.ContinueOnError)
	out := fs.String("out", "build/images", "output directory")
	only := fs.String("only", "", "comma-separated builders to run (default: all)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: mkimages -out DIR [-only NAME,...]\nbuilders:")
		for _, b := range testimage.Builders() {
			fmt.Fprintf(fs.Output(), "  %-10s %s\n", b.Name, b.Help)
		}
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	selected, err := pick(testimage.Builders(), *only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkimages:", err)
		return 2
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "mkimages:", err)
		return 1
	}
	for _, b := range selected {
		paths, err := b.Build(ctx, *out)
		if err != nil {
			fmt.Fprintf(os.Stderr, "mkimages: %s: %v\n", b.Name, err)
			return 1
		}
		for _, p := range paths {
			fmt.Printf("%s: wrote %s\n", b.Name, p)
		}
	}
	return 0
}

func pick(all []testimage.Builder, only string) ([]testimage.Builder, error) {
	if strings.TrimSpace(only) == "" {
		return all, nil
	}
	byName := map[string]testimage.Builder{}
	for _, b := range all {
		byName[b.Name] = b
	}
	var out []testimage.Builder
	for _, n := range strings.Split(only, ",") {
		n = strings.TrimSpace(n)
		b, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("unknown builder %q (have %s)", n, names(all))
		}
		out = append(out, b)
	}
	return out, nil
}

func names(bs []testimage.Builder) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = b.Name
	}
	return strings.Join(s, ", ")
}
