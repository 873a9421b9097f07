package api

import (
	"errors"
	"strings"
	"testing"
)

func TestWriteUsageCSV(t *testing.T) {
	var b strings.Builder
	err := WriteUsageCSV(&b, &UsageResponse{Rows: []UsageRow{
		{Key: "team-a", Bucket: 3600, GPUSeconds: map[string]float64{"nvidia/gpu/H100": 7200, "nvidia/gpu/A100": 1.5},
			CPUCoreSeconds: 10, MemoryGiBSeconds: 2.25, Cost: 5},
		{Key: "team-b", Bucket: 7200, CPUCoreSeconds: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := "key,bucket,start,gpu_seconds,cpu_core_seconds,memory_gib_seconds,cost,gpu_seconds:nvidia/gpu/A100,gpu_seconds:nvidia/gpu/H100\n" +
		"team-a,3600,1970-01-01T01:00:00Z,7201.5,10,2.25,5,1.5,7200\n" +
		"team-b,7200,1970-01-01T02:00:00Z,0,1,0,0,0,0\n"
	if b.String() != want {
		t.Errorf("csv:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestUsageRetentionValidated(t *testing.T) {
	for _, h := range []int{-1, MaxUsageRetentionHours + 1} {
		if err := (&SchedulerConfiguration{UsageRetentionHours: h}).Validate(); !errors.Is(err, ErrBadRequest) {
			t.Errorf("UsageRetentionHours %d: %v, want a bad request", h, err)
		}
	}
	if err := (&SchedulerConfiguration{UsageRetentionHours: 48}).Validate(); err != nil {
		t.Error(err)
	}
}
