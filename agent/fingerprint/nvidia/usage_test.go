package nvidia

import "testing"

// TestGPUUsageSimulated: the simulator's GPUs report as simulated (their
// usage is made up by the caller), not as idle readings.
func TestGPUUsageSimulated(t *testing.T) {
	sim, err := NewPureSim(SimConfig{Shape: "dgxh100", NodeID: "n"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(Config{Library: sim})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, simulated, err := f.GPUUsage([]string{f.Devices()[0].Instances[0].ID})
	if err != nil || !simulated || u != nil {
		t.Errorf("GPUUsage = %v, simulated %v, err %v; want simulated", u, simulated, err)
	}
}
