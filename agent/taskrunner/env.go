package taskrunner

import (
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

// Dirs are the paths a task sees for its directories: host paths for
// drivers that run on the host (raw_exec), in-task paths (/alloc, /local,
// /secrets) for drivers that mount them.
type Dirs struct {
	AllocDir   string // the shared alloc/ dir
	TaskDir    string // the task's local/ dir
	SecretsDir string
	TmpDir     string
}

// HostDirs are the host paths of a task's dirs under allocDir.
func HostDirs(allocDir, task string) Dirs {
	return Dirs{
		AllocDir:   filepath.Join(allocDir, "alloc"),
		TaskDir:    filepath.Join(allocDir, task, "local"),
		SecretsDir: filepath.Join(allocDir, task, "secrets"),
		TmpDir:     filepath.Join(allocDir, task, "tmp"),
	}
}

// MountedDirs are the in-task paths of drivers that mount the dirs.
func MountedDirs() Dirs {
	return Dirs{AllocDir: "/alloc", TaskDir: "/local", SecretsDir: "/secrets", TmpDir: "/tmp"}
}

// EnvInput is what the task environment is built from.
type EnvInput struct {
	Alloc  *api.Allocation
	Task   *api.Task
	Node   *api.Node
	Region string
	Dirs   Dirs
	// MPSPipeDirs are the MPS pipe directories of the task's GPUs shared
	// in MPS mode as the task sees them, by GPU UUID (nil: none).
	MPSPipeDirs map[string]string
}

// BuildEnv returns the task's environment: every variable under both the
// DROVER_ and the NOMAD_ prefix, GPU visibility and GPU shares (see
// gpuShareEnv; DROVER_ only), a gang member's
// DROVER_GANG_* and torch.distributed variables (see gangEnv), then the
// task's own env (interpolated against the former, and overriding it).
func BuildEnv(in EnvInput) map[string]string {
	a, t := in.Alloc, in.Task
	v := map[string]string{}
	set := func(k, val string) {
		v["DROVER_"+k] = val
		v["NOMAD_"+k] = val
	}
	set("ALLOC_ID", a.ID)
	set("SHORT_ALLOC_ID", shortID(a.ID))
	set("ALLOC_NAME", a.Name)
	set("ALLOC_INDEX", strconv.Itoa(a.Index()))
	set("JOB_ID", a.JobID)
	set("GROUP_NAME", a.TaskGroup)
	set("TASK_NAME", t.Name)
	set("NAMESPACE", orDefault(a.Namespace, api.DefaultNamespace))
	set("TASK_DIR", in.Dirs.TaskDir)
	set("ALLOC_DIR", in.Dirs.AllocDir)
	set("SECRETS_DIR", in.Dirs.SecretsDir)
	v["TMPDIR"] = in.Dirs.TmpDir
	region := in.Region
	var job *api.Job
	if job = a.Job; job != nil {
		set("JOB_NAME", orDefault(job.Name, job.ID))
		if job.ParentID != "" {
			set("JOB_PARENT_ID", job.ParentID)
		}
		if region == "" {
			region = job.Region
		}
	}
	set("REGION", orDefault(region, api.DefaultRegion))
	if n := in.Node; n != nil {
		set("DC", n.Datacenter)
		set("NODE_ID", n.ID)
		set("NODE_NAME", n.Name)
	}
	if ar := a.AllocatedResources; ar != nil {
		if tr := ar.Tasks[t.Name]; tr != nil {
			set("CPU_LIMIT", strconv.FormatInt(tr.Cpu.CpuShares, 10))
			set("MEMORY_LIMIT", strconv.FormatInt(tr.Memory.MemoryMB, 10))
			if tr.Memory.MemoryMaxMB > 0 {
				set("MEMORY_MAX_LIMIT", strconv.FormatInt(tr.Memory.MemoryMaxMB, 10))
			}
			if len(tr.Cpu.ReservedCores) > 0 {
				cs := make([]string, len(tr.Cpu.ReservedCores))
				for i, c := range tr.Cpu.ReservedCores {
					cs[i] = strconv.Itoa(int(c))
				}
				set("CPU_CORES", strings.Join(cs, ","))
			}
			for _, nw := range tr.Networks {
				ip := nw.IP
				if ip == "" && in.Node != nil {
					ip = in.Node.Attributes["unique.network.ip-address"]
				}
				addPorts(set, ip, nw.ReservedPorts)
				addPorts(set, ip, nw.DynamicPorts)
			}
			if ids := GPUIDs(tr); len(ids) > 0 {
				j := strings.Join(ids, ",")
				v["CUDA_VISIBLE_DEVICES"] = j
				v["NVIDIA_VISIBLE_DEVICES"] = j
				set("GPU_IDS", j)
			}
			gpuShareEnv(v, tr, in.Node, in.MPSPipeDirs)
		}
		for _, p := range ar.Shared.Ports {
			ip := p.HostIP
			if ip == "" && in.Node != nil {
				ip = in.Node.Attributes["unique.network.ip-address"]
			}
			to := p.To
			if to == 0 {
				to = p.Value
			}
			set("PORT_"+p.Label, strconv.Itoa(to))
			set("HOST_PORT_"+p.Label, strconv.Itoa(p.Value))
			if ip != "" {
				set("IP_"+p.Label, ip)
				set("ADDR_"+p.Label, net.JoinHostPort(ip, strconv.Itoa(p.Value)))
			}
		}
	}
	gangEnv(v, a.Gang, in.Dirs)
	// Meta: job < group < task, each key also upper-cased.
	meta := map[string]string{}
	if job != nil {
		maps.Copy(meta, job.Meta)
		if tg := job.LookupTaskGroup(a.TaskGroup); tg != nil {
			maps.Copy(meta, tg.Meta)
		}
	}
	maps.Copy(meta, t.Meta)
	for k, val := range meta {
		set("META_"+k, val)
		set("META_"+strings.ToUpper(k), val)
	}
	// The task's own env may refer to the above and to node attributes.
	for k, val := range t.Env {
		v[k] = Interpolate(val, v, in.Node)
	}
	return v
}

func addPorts(set func(k, v string), ip string, ports []api.Port) {
	for _, p := range ports {
		to := p.To
		if to == 0 {
			to = p.Value
		}
		set("PORT_"+p.Label, strconv.Itoa(to))
		set("HOST_PORT_"+p.Label, strconv.Itoa(p.Value))
		if ip != "" {
			set("IP_"+p.Label, ip)
			set("ADDR_"+p.Label, net.JoinHostPort(ip, strconv.Itoa(p.Value)))
		}
	}
}

// GPUIDs returns the assigned NVIDIA device IDs (UUIDs) of a task.
func GPUIDs(tr *api.AllocatedTaskResources) []string {
	var ids []string
	for _, d := range tr.Devices {
		if d.Vendor == drivers.VendorNvidia {
			ids = append(ids, d.DeviceIDs...)
		}
	}
	return ids
}

// GPUDeviceSpecs returns the device nodes a task given GPUs needs: the
// device paths the node's fingerprint gives each assigned instance
// (api.NodeDevice.DevicePaths: /dev/nvidia<minor>, a MIG instance's
// capability nodes), each once, then drivers.NvidiaControlDevices. An
// instance the fingerprint gives no paths adds none. Only nodes present
// on the host (under devRoot, "" = "/") are returned.
func GPUDeviceSpecs(tr *api.AllocatedTaskResources, node *api.Node, devRoot string) []*drivers.DeviceSpec {
	ids := GPUIDs(tr)
	if len(ids) == 0 {
		return nil
	}
	instPaths := map[string][]string{}
	if node != nil && node.NodeResources != nil {
		for _, d := range node.NodeResources.Devices {
			if d.Vendor != drivers.VendorNvidia {
				continue
			}
			for _, inst := range d.Instances {
				instPaths[inst.ID] = inst.DevicePaths
			}
		}
	}
	var paths []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] { // MIG instances share their GPU's node
			seen[p] = true
			paths = append(paths, p)
		}
	}
	for _, id := range ids {
		for _, p := range instPaths[id] {
			add(p)
		}
	}
	for _, p := range drivers.NvidiaControlDevices {
		add(p)
	}
	var out []*drivers.DeviceSpec
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(orDefault(devRoot, "/"), p)); err != nil {
			continue
		}
		out = append(out, &drivers.DeviceSpec{HostPath: p, TaskPath: p, Permissions: "rwm", Vendor: drivers.VendorNvidia})
	}
	return out
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
