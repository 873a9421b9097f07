package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"reflect"
	"sort"
	"strings"
	"sync"
)

// decodeJobBody reads a job request like decodeBody but, as Nomad does,
// accepts fields drover does not know: job JSON written by Nomad tooling
// carries Vault, Consul, Scaling ... blocks. Those fields are ignored and
// named in the returned warnings (the register answer's Warnings), so
// nothing is dropped silently. Malformed JSON is still a 400.
func decodeJobBody(r *nethttp.Request, v any) (warnings []string, err error) {
	if r.Body == nil {
		return nil, bodyError(io.EOF)
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, bodyError(err)
	}
	if err := decodeOne(json.NewDecoder(bytes.NewReader(data)), v); err != nil {
		return nil, err
	}
	unknown := unknownFields(data, reflect.TypeOf(v))
	if len(unknown) == 0 {
		return nil, nil
	}
	const most = 20
	more := ""
	if len(unknown) > most {
		more = fmt.Sprintf(" and %d more", len(unknown)-most)
		unknown = unknown[:most]
	}
	return []string{"ignored fields drover does not support: " + strings.Join(unknown, ", ") + more}, nil
}

// unknownFields lists the object keys in data that type t has no field
// for, as paths such as "Job.TaskGroups[0].Tasks[0].Vault". Keys match
// fields case-insensitively, as encoding/json does; values of map-typed
// fields (Config, Meta, Env) and of interface fields are free-form.
func unknownFields(data []byte, t reflect.Type) []string {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return nil
	}
	var out []string
	walkUnknown(v, t, "", &out)
	sort.Strings(out)
	return out
}

func walkUnknown(v any, t reflect.Type, path string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return // e.g. time.Time as a string
		}
		fields := jsonFields(t)
		for k, val := range obj {
			p := k
			if path != "" {
				p = path + "." + k
			}
			ft, ok := fields[strings.ToLower(k)]
			if !ok {
				*out = append(*out, p)
				continue
			}
			walkUnknown(val, ft, p, out)
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			return // []byte is base64 text
		}
		for i, e := range arr {
			walkUnknown(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), out)
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, e := range m {
			walkUnknown(e, t.Elem(), path+"["+k+"]", out)
		}
	}
}

var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields maps the lower-cased JSON names of t's fields (embedded
// structs flattened) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					out[k] = v
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[strings.ToLower(name)] = f.Type
	}
	fieldCache.Store(t, out)
	return out
}
