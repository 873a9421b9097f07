package http

import (
	"fmt"
	nethttp "net/http"
	"sort"
	"strconv"

	"github.com/hashicorp/go-bexpr"

	"github.com/drover/drover/api"
)

// Headers of a paginated list: the token of the next page's first item.
const (
	headerNextToken      = "X-Drover-NextToken"
	headerNomadNextToken = "X-Nomad-NextToken"
)

// maxFilterLen bounds a filter expression (it is parsed per request).
const maxFilterLen = 4096

// listPage applies a list request's Nomad query parameters to items:
// filter (a go-bexpr expression over the items' fields), then per_page and
// next_token (items ordered by key; the token is the key of a page's first
// item, answered in X-Drover-NextToken / X-Nomad-NextToken while more
// pages follow). Bad parameters are 400s.
func listPage[T any](w nethttp.ResponseWriter, r *nethttp.Request, items []T, key func(T) string) ([]T, error) {
	q := r.URL.Query()
	out, err := filterItems(items, q.Get("filter"))
	if err != nil {
		return nil, err
	}
	perPage := 0
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("invalid per_page=%q: want a positive integer", v))
		}
		perPage = n
	}
	token := q.Get("next_token")
	if perPage == 0 && token == "" {
		return out, nil
	}
	sorted := make([]T, len(out))
	copy(sorted, out)
	sort.SliceStable(sorted, func(i, j int) bool { return key(sorted[i]) < key(sorted[j]) })
	start := sort.Search(len(sorted), func(i int) bool { return key(sorted[i]) >= token })
	sorted = sorted[start:]
	w.Header().Del(headerNextToken)
	w.Header().Del(headerNomadNextToken)
	if perPage > 0 && len(sorted) > perPage {
		next := key(sorted[perPage])
		w.Header().Set(headerNextToken, next)
		w.Header().Set(headerNomadNextToken, next)
		sorted = sorted[:perPage]
	}
	return sorted, nil
}

// filterItems keeps the items a go-bexpr expression over their fields
// matches ("" keeps all); a bad or over-long filter is a 400.
func filterItems[T any](items []T, f string) ([]T, error) {
	if f == "" {
		return items, nil
	}
	if len(f) > maxFilterLen {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("filter is %d bytes, over the %d byte limit", len(f), maxFilterLen))
	}
	ev, err := bexpr.CreateEvaluator(f)
	if err != nil {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("invalid filter %q: %v", f, err))
	}
	kept := make([]T, 0, len(items))
	for _, it := range items {
		ok, err := ev.Evaluate(it)
		if err != nil {
			return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("filter %q: %v", f, err))
		}
		if ok {
			kept = append(kept, it)
		}
	}
	return kept, nil
}

// nsKey orders namespaced objects by namespace, then ID.
func nsKey(ns, id string) string { return ns + "." + id }
