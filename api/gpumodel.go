package api

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
)

// Device names people type. NVML names a GPU "NVIDIA H100 80GB HBM3",
// "NVIDIA A100-SXM4-80GB" or "Tesla V100-SXM2-32GB"; people write H100,
// A100-80GB or V100. A GPU model's aliases (its family, with its form
// factor and memory where the name gives them) are derived from its name
// alone, so the scheduler matching a device ask, the queue limits
// checked by the scheduler and the plan applier, and fair share all read
// them from what both a node and an alloc carry (a device group's Name),
// never from node attributes an alloc does not have. Comparisons ignore
// case, spaces, hyphens and underscores: "h100-80gb" is "H100 80GB".
//
// MIG instances are devices of their own model: type "mig", named
// "<GPU name> MIG <profile>", asked for by profile ("nvidia/gpu/1g.10gb"),
// by GPU and profile ("nvidia/gpu/H100 MIG 1g.10gb"), or any of them as
// "nvidia/mig" (with a constraint on ${device.attr.memory} to ask by
// memory). A plain "gpu" or "nvidia/gpu" ask never gets one: as with
// Kubernetes' nvidia.com/gpu and nvidia.com/mig-1g.10gb, a MIG slice goes
// only to an ask that names it, so a job written for a whole GPU never
// lands on a seventh of one. A MIG instance is already a hardware
// partition and is not shared (a share ask for one is invalid: ask a
// smaller profile), and queues count only whole and shared GPUs (grants
// of type "gpu", see QueueUsage), so a queue's gpu_models may not name a
// MIG profile.

// Device types of GPUs and of MIG instances.
const (
	DeviceTypeGPU = "gpu"
	DeviceTypeMIG = "mig"
)

// Matches reports whether a device ask's name asks for this group: "gpu"
// (the type), "nvidia/gpu" (vendor and type), or "nvidia/gpu/<model>"
// where the model is the group's name or one of its aliases
// (GPUModelAliases; "nvidia/gpu/H100" matches "NVIDIA H100 80GB HBM3").
// A MIG group is matched by "mig", "nvidia/mig", "nvidia/mig/<model>"
// and "nvidia/gpu/<model>" where the model names the MIG profile
// ("nvidia/gpu/1g.10gb"), never by "gpu" or "nvidia/gpu" alone.
func (d *NodeDeviceResource) Matches(ask string) bool {
	vendor, rest, ok := strings.Cut(ask, "/")
	if !ok {
		return ask == d.Type
	}
	typ, model, ok := strings.Cut(rest, "/")
	if !ok {
		return vendor == d.Vendor && typ == d.Type
	}
	if vendor != d.Vendor || strings.Contains(model, "/") {
		return false
	}
	switch {
	case typ == d.Type:
	case typ == DeviceTypeGPU && d.Type == DeviceTypeMIG:
		// Only a MIG model (its aliases all name the profile) matches.
	default:
		return false
	}
	return d.ModelIs(model)
}

// ModelIs reports whether want names the group's model: its name or, for
// GPUs and MIG instances, one of its aliases (GPUModelIs).
func (d *NodeDeviceResource) ModelIs(want string) bool {
	return want == d.Name || (d.Type == DeviceTypeGPU || d.Type == DeviceTypeMIG) && GPUModelIs(d.Name, want)
}

// GPUModelIs reports whether want names the GPU (or MIG) model name: the
// name itself or one of its aliases, ignoring case, spaces, hyphens and
// underscores.
func GPUModelIs(name, want string) bool {
	if sameModel(name, want) {
		return true
	}
	for _, a := range cachedAliases(name) {
		if sameModel(a, want) {
			return true
		}
	}
	return false
}

// GPUModelAliases derives the short names of a GPU model from its NVML
// name: the family ("H100", "A10G", "RTX-4090"), and with the form
// factor ("A100-SXM4", "H100-NVL") and the memory ("A100-80GB",
// "A100-SXM4-80GB") where the name gives them. Families that come in one
// memory size only (T4, L4, A10G, L40S ...) get their memory when the
// name omits it. A MIG model ("NVIDIA H100 80GB HBM3 MIG 1g.10gb") has
// its profile ("1g.10gb") and each GPU alias with it ("H100 MIG
// 1g.10gb"). Nil when the name has no model number.
func GPUModelAliases(name string) []string {
	if parent, profile, ok := cutMIG(name); ok {
		out := []string{profile}
		for _, a := range GPUModelAliases(parent) {
			out = append(out, a+" MIG "+profile)
		}
		return out
	}
	toks := strings.FieldsFunc(name, func(r rune) bool { return r == ' ' || r == '-' || r == '_' })
	for len(toks) > 0 && brandWords[strings.ToUpper(toks[0])] {
		toks = toks[1:]
	}
	if len(toks) == 0 {
		return nil
	}
	family, rest := toks[0], toks[1:]
	switch {
	case seriesWords[strings.ToUpper(family)] && len(rest) > 0:
		family, rest = family+"-"+rest[0], rest[1:]
	case !strings.ContainsAny(family, "0123456789"):
		return nil // "NVIDIA Graphics Device": no model to name
	}
	for len(rest) > 0 && modelSuffixes[strings.ToUpper(rest[0])] {
		family, rest = family+"-"+rest[0], rest[1:]
	}
	var form, mem string
	for _, t := range rest {
		switch {
		case form == "" && isFormFactor(t):
			form = t
		case mem == "" && isMemorySize(t):
			mem = strings.ToUpper(t)
		}
	}
	if mem == "" {
		mem = oneSize[strings.ToUpper(family)]
	}
	out := []string{family}
	if form != "" {
		out = append(out, family+"-"+form)
	}
	if mem != "" {
		out = append(out, family+"-"+mem)
		if form != "" {
			out = append(out, family+"-"+form+"-"+mem)
		}
	}
	return out
}

// GPUModelLabel renders a device group's model for messages: its name
// and its aliases, "NVIDIA H100 80GB HBM3 (H100, H100-80GB)".
func GPUModelLabel(d *NodeDeviceResource) string {
	if d.Type != DeviceTypeGPU && d.Type != DeviceTypeMIG {
		return d.ID()
	}
	if a := cachedAliases(d.Name); len(a) > 0 {
		return d.Name + " (" + strings.Join(a, ", ") + ")"
	}
	return d.Name
}

// IsMIGProfile reports whether s is a MIG profile as nvidia-smi names
// them: "1g.10gb", "3g.40gb", "1g.10gb+me", "1c.2g.20gb".
func IsMIGProfile(s string) bool { return migProfile().MatchString(s) }

// IsMIGModel reports whether a model part of a device name names MIG
// instances: a profile ("1g.10gb") or "<GPU> MIG <profile>".
func IsMIGModel(model string) bool {
	if IsMIGProfile(model) {
		return true
	}
	_, _, ok := cutMIG(model)
	return ok
}

// isMIGAsk reports whether a device ask names MIG instances only
// ("mig", "nvidia/mig", "nvidia/gpu/1g.10gb").
func isMIGAsk(name string) bool {
	parts := strings.Split(name, "/")
	switch len(parts) {
	case 1:
		return parts[0] == DeviceTypeMIG
	case 2:
		return parts[1] == DeviceTypeMIG
	case 3:
		return parts[1] == DeviceTypeMIG || parts[1] == DeviceTypeGPU && IsMIGModel(parts[2])
	}
	return false
}

// GPUAskModel reports whether a device ask counts as GPUs for queues and
// fair share, and the model key it counts under ("" for any model): "gpu"
// and "nvidia/gpu" count as GPUs of any model, "nvidia/gpu/H100" as
// model "nvidia/gpu/H100". Asks for MIG instances ("nvidia/mig",
// "nvidia/gpu/1g.10gb") do not count, as their grants do not (QueueUsage).
func GPUAskModel(name string) (model string, gpu bool) {
	parts := strings.Split(name, "/")
	switch {
	case len(parts) == 1:
		return "", parts[0] == DeviceTypeGPU
	case len(parts) == 2:
		return "", parts[1] == DeviceTypeGPU
	case len(parts) == 3 && parts[1] == DeviceTypeGPU && !IsMIGModel(parts[2]):
		return name, true
	}
	return "", false
}

// CheckGPUModelKey checks a key of a queue's gpu_models: a model as
// people type it ("H100", "A100-80GB") or as a device ask names it
// ("nvidia/gpu/H100", "nvidia/gpu/NVIDIA H100 80GB HBM3"). A key that
// names MIG instances or another device type is refused: queues never
// count those, so such a limit would cap nothing.
func CheckGPUModelKey(key string) error {
	_, typ, model, ok := splitModelKey(key)
	switch {
	case !ok:
		return fmt.Errorf("gpu model %q: want a model (%q) or vendor/gpu/model (%q)", key, "H100", "nvidia/gpu/H100")
	case typ == DeviceTypeMIG || IsMIGModel(model):
		return fmt.Errorf("gpu model %q names MIG instances, which queues do not count (only whole and shared GPUs)", key)
	case typ != "" && typ != DeviceTypeGPU:
		return fmt.Errorf("gpu model %q: type %q is not gpu; queues count GPUs only", key, typ)
	}
	return nil
}

// GPUModelKeyMatches reports whether a queue's gpu_models key counts the
// GPUs of model id ("vendor/gpu/name", as QueueUsage and the scheduler
// key them): the same key, or a key whose model is the name or one of
// its aliases (and whose vendor, when given, is id's). The scheduler, the
// plan applier and api.QueueResources.Exceeds all count a key's GPUs
// through it (ModelGPUs).
func GPUModelKeyMatches(key, id string) bool {
	if key == id {
		return true
	}
	kv, kt, km, ok := splitModelKey(key)
	if !ok {
		return false
	}
	vendor, rest, _ := strings.Cut(id, "/")
	typ, name, ok := strings.Cut(rest, "/")
	if !ok || typ != DeviceTypeGPU || kt != "" && kt != typ || kv != "" && kv != vendor {
		return false
	}
	return GPUModelIs(name, km)
}

// ModelGPUs is how many GPUs r holds of the models a gpu_models key
// counts (GPUModelKeyMatches).
func (r *QueueResources) ModelGPUs(key string) float64 {
	if r == nil {
		return 0
	}
	var n float64
	for m, k := range r.GPUsByModel {
		if GPUModelKeyMatches(key, m) {
			n += k
		}
	}
	return RoundGPUs(n)
}

// splitModelKey splits "H100" into ("", "", "H100") and
// "nvidia/gpu/H100" into its three parts; ok is false for other shapes.
func splitModelKey(key string) (vendor, typ, model string, ok bool) {
	parts := strings.Split(key, "/")
	switch {
	case len(parts) == 1 && parts[0] != "":
		return "", "", parts[0], true
	case len(parts) == 3 && parts[0] != "" && parts[1] != "" && parts[2] != "":
		return parts[0], parts[1], parts[2], true
	}
	return "", "", "", false
}

// cutMIG splits "<GPU> MIG <profile>" (any case) at its last " MIG ".
func cutMIG(name string) (parent, profile string, ok bool) {
	i := strings.LastIndex(strings.ToUpper(name), " MIG ")
	if i < 0 {
		return "", "", false
	}
	parent, profile = strings.TrimSpace(name[:i]), strings.TrimSpace(name[i+len(" MIG "):])
	return parent, profile, parent != "" && IsMIGProfile(profile)
}

// sameModel compares model names ignoring case, spaces, hyphens and
// underscores.
func sameModel(a, b string) bool {
	i, j := 0, 0
	for {
		for i < len(a) && isModelSep(a[i]) {
			i++
		}
		for j < len(b) && isModelSep(b[j]) {
			j++
		}
		if i == len(a) || j == len(b) {
			return i == len(a) && j == len(b)
		}
		if upper(a[i]) != upper(b[j]) {
			return false
		}
		i, j = i+1, j+1
	}
}

func isModelSep(c byte) bool { return c == ' ' || c == '-' || c == '_' }

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

// isFormFactor: SXM, SXM2 ... SXM5, PCIe, NVL.
func isFormFactor(t string) bool {
	u := strings.ToUpper(t)
	if u == "PCIE" || u == "NVL" || u == "SXM" {
		return true
	}
	return len(u) == 4 && strings.HasPrefix(u, "SXM") && u[3] >= '0' && u[3] <= '9'
}

// isMemorySize: digits followed by GB ("80GB").
func isMemorySize(t string) bool {
	if len(t) < 3 || !strings.EqualFold(t[len(t)-2:], "GB") {
		return false
	}
	for _, c := range t[:len(t)-2] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

var (
	// brandWords come before the model in NVML names.
	brandWords = map[string]bool{"NVIDIA": true, "TESLA": true, "GEFORCE": true, "QUADRO": true, "MOCK": true}
	// seriesWords join the word after them: "RTX 4090" is RTX-4090.
	seriesWords = map[string]bool{"RTX": true, "GTX": true, "TITAN": true}
	// modelSuffixes belong to the model: "RTX 3090 Ti", "RTX 6000 Ada".
	modelSuffixes = map[string]bool{"TI": true, "SUPER": true, "ADA": true}
	// oneSize is the memory of families sold in one size whose NVML
	// name omits it (a name that gives one wins).
	oneSize = map[string]string{"T4": "16GB", "A2": "16GB", "L4": "24GB", "A10": "24GB", "A10G": "24GB", "A30": "24GB",
		"A40": "48GB", "L40": "48GB", "L40S": "48GB", "L20": "48GB", "H20": "96GB", "H200": "141GB",
		"RTX-4090": "24GB", "RTX-3090": "24GB", "RTX-A6000": "48GB"}
	migProfile = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?i)([0-9]+c\.)?[0-9]+g\.[0-9]+gb(\+[a-z]+)?$`)
	})
)

// aliasCache memoizes GPUModelAliases by name for the scheduler's hot
// loops (a node's device groups are matched against an ask on every
// node of a pass); bounded, as node names of devices come from clients.
var (
	aliasCache  sync.Map // name -> []string
	aliasCached atomic.Int64
)

const aliasCacheMax = 4096

func cachedAliases(name string) []string {
	if v, ok := aliasCache.Load(name); ok {
		return v.([]string)
	}
	a := GPUModelAliases(name)
	if aliasCached.Add(1) <= aliasCacheMax {
		aliasCache.Store(name, a)
	}
	return a
}
