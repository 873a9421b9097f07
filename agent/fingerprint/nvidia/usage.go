package nvidia

import "errors"

// Usage is one GPU's reading: utilization over NVML's last sample period
// and memory in use.
type Usage struct {
	UtilPercent   float64
	MemoryUsedMiB int64
}

// UsageReader is a Library that reads a GPU's usage by UUID (NVML).
type UsageReader interface {
	Usage(uuid string) (Usage, error)
}

// GPUUsage reads the GPUs (or MIG instances) with the given UUIDs; those
// the library cannot read are left out. simulated: the library is the
// simulator, whose GPUs do no work (callers make the figures up).
func (f *Fingerprinter) GPUUsage(ids []string) (usage map[string]Usage, simulated bool, err error) {
	if _, sim := f.cfg.Library.(Simulator); sim {
		return nil, true, nil
	}
	r, ok := f.cfg.Library.(UsageReader)
	if !ok {
		return nil, false, errors.New("the GPU library cannot read usage")
	}
	usage = make(map[string]Usage, len(ids))
	for _, id := range ids {
		if u, err := r.Usage(id); err == nil {
			usage[id] = u
		}
	}
	return usage, false, nil
}
