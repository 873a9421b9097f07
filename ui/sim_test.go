package ui_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

func uuid(t *testing.T) string {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func (a *devAgent) send(method, p string, body any, hdr map[string]string, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(method, a.base+p, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e api.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return fmt.Errorf("%s %s: %s: %+v", method, p, resp.Status, e.Error)
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

// gpuNode registers a simulated client node through the public API (as
// the node simulator does): 8 GPUs in NVLink pairs, two NUMA nodes, one
// unhealthy GPU, in datacenter dc2. A goroutine owned by the test
// heartbeats it until the test ends. It returns the node's ID.
func gpuNode(t *testing.T, a *devAgent) string {
	t.Helper()
	return registerGPUNode(t, a).ID
}

// registerGPUNode is gpuNode returning the node (its SecretID lets a test
// report alloc updates as the node's client would).
func registerGPUNode(t *testing.T, a *devAgent) *api.Node {
	t.Helper()
	ids := make([]string, 8)
	for i := range ids {
		ids[i] = "GPU-" + uuid(t)
	}
	link := func(i, j int) api.DeviceLink {
		switch {
		case i/2 == j/2:
			return api.DeviceLink{Kind: api.LinkNVLink, Level: 1, NVLinks: 4}
		case i/4 == j/4:
			return api.DeviceLink{Kind: api.LinkPCIeHost, Level: 3}
		}
		return api.DeviceLink{Kind: api.LinkSystem, Level: 4}
	}
	var inst []*api.NodeDevice
	for i, id := range ids {
		d := &api.NodeDevice{ID: id, Healthy: i != 7, Links: map[string]api.DeviceLink{},
			Locality: &api.NodeDeviceLocality{PciBusID: fmt.Sprintf("0000:%02x:00.0", 0x17+i*0x10), NUMANode: i / 4}}
		if !d.Healthy {
			d.HealthDescription = "XID 79: GPU has fallen off the bus"
		}
		for j, other := range ids {
			if j != i {
				d.Links[other] = link(i, j)
			}
		}
		inst = append(inst, d)
	}
	mem := int64(81920)
	n := &api.Node{
		ID: uuid(t), SecretID: uuid(t), Datacenter: "dc2", Name: "gpu-sim-1", HTTPAddr: "127.0.0.1:1", NodePool: api.DefaultNodePool,
		Attributes: map[string]string{"kernel.name": "linux", "unique.hostname": "gpu-sim-1", "driver.raw_exec": "1", "cpu.arch": "amd64"},
		Drivers:    map[string]*api.DriverInfo{"raw_exec": {Detected: true, Healthy: true, HealthDescription: "healthy"}},
		NodeResources: &api.NodeResources{
			Cpu: api.NodeCpuResources{CpuShares: 64000, TotalCpuCores: 32}, Memory: api.NodeMemoryResources{MemoryMB: 512 * 1024},
			Disk: api.NodeDiskResources{DiskMB: 1 << 20},
			Devices: []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "A100-PCIE-80GB", Instances: inst,
				Attributes: map[string]*api.Attribute{"memory": {IntVal: &mem, Unit: "MiB"}}}},
		},
		SchedulingEligibility: api.NodeSchedulingEligible,
	}
	var reg api.NodeRegisterResponse
	if err := a.send("PUT", "/v1/node/register", api.NodeRegisterRequest{Node: n}, nil, &reg); err != nil {
		t.Fatalf("register the simulated GPU node: %v", err)
	}
	every := reg.HeartbeatTTL / 3
	if every <= 0 || every > 2*time.Second {
		every = 2 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				// Errors are expected while the agent restarts.
				_ = a.send("PUT", "/v1/node/"+n.ID+"/heartbeat", api.NodeHeartbeatRequest{}, map[string]string{api.NodeSecretHeader: n.SecretID}, nil)
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return n
}

// gpuJobs registers a job that takes 6 of the simulated node's 8 GPUs (its
// allocations stay pending: no client runs them) and one that cannot be
// placed at all, so the pages show GPU use and placement failures.
func gpuJobs(t *testing.T, a *devAgent) {
	t.Helper()
	gpuTask := func(name string, gpus uint64) *api.Task {
		return &api.Task{Name: name, Driver: "raw_exec", Config: map[string]any{"command": "/bin/sleep", "args": []string{"3600"}},
			Resources: &api.Resources{CPU: 4000, MemoryMB: 32768, Devices: []*api.RequestedDevice{{Name: "nvidia/gpu", Count: gpus}}}}
	}
	jobs := []*api.Job{
		{ID: "train", Type: api.JobTypeService, Datacenters: []string{"dc2"},
			TaskGroups: []*api.TaskGroup{{Name: "train", Count: 3, Tasks: []*api.Task{gpuTask("worker", 2)}}}},
		{ID: "too-big", Type: api.JobTypeBatch, Datacenters: []string{"*"},
			TaskGroups: []*api.TaskGroup{{Name: "huge", Count: 1, Tasks: []*api.Task{gpuTask("trainer", 16)}}}},
	}
	for _, j := range jobs {
		if err := a.send("PUT", "/v1/jobs", api.JobRegisterRequest{Job: j}, nil, nil); err != nil {
			t.Fatalf("register job %s: %v", j.ID, err)
		}
	}
}
