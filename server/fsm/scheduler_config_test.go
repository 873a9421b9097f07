package fsm

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/drover/drover/api"
	"github.com/google/go-cmp/cmp"
)

func TestApplySchedulerConfig(t *testing.T) {
	f := New(Config{})
	a := &applier{t: t, f: f}
	if got, err := f.State().SchedulerConfig(nil); err != nil || got != nil {
		t.Fatalf("fresh store: got %+v, %v, want nil (defaults apply)", got, err)
	}
	spread := &api.SchedulerConfiguration{SchedulerAlgorithm: api.SchedulerAlgorithmSpread,
		PreemptionConfig: api.PreemptionConfig{ServiceSchedulerEnabled: true}}
	a.mustApply(SchedulerConfigType, SchedulerConfigRequest{Config: spread})
	want := &api.SchedulerConfiguration{SchedulerAlgorithm: api.SchedulerAlgorithmSpread,
		PreemptionConfig: api.PreemptionConfig{ServiceSchedulerEnabled: true}, CreateIndex: 1, ModifyIndex: 1}
	got, _ := f.State().SchedulerConfig(nil)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after set (-want +got):\n%s", diff)
	}

	// A CAS with a stale index changes nothing but still advances the index.
	err := a.apply(SchedulerConfigType, SchedulerConfigRequest{Config: api.DefaultSchedulerConfiguration(), CAS: true, CASIndex: 7})
	if !errors.Is(err, api.ErrIndexConflict) {
		t.Fatalf("stale CAS: got %v, want ErrIndexConflict", err)
	}
	got, _ = f.State().SchedulerConfig(nil)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after stale CAS (-want +got):\n%s", diff)
	}
	if g := f.State().LatestIndex(); g != 2 {
		t.Errorf("latest index after a rejected CAS: got %d, want 2", g)
	}

	// A CAS at the stored ModifyIndex writes, keeping CreateIndex; "" is binpack.
	a.mustApply(SchedulerConfigType, SchedulerConfigRequest{Config: &api.SchedulerConfiguration{
		PreemptionConfig: api.PreemptionConfig{BatchSchedulerEnabled: true}}, CAS: true, CASIndex: 1})
	want = &api.SchedulerConfiguration{SchedulerAlgorithm: api.SchedulerAlgorithmBinpack,
		PreemptionConfig: api.PreemptionConfig{BatchSchedulerEnabled: true}, CreateIndex: 1, ModifyIndex: 3}
	got, _ = f.State().SchedulerConfig(nil)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after CAS (-want +got):\n%s", diff)
	}
	if g := f.State().Index("scheduler_config"); g != 3 {
		t.Errorf("table index: got %d, want 3", g)
	}

	for name, req := range map[string]SchedulerConfigRequest{
		"unknown algorithm": {Config: &api.SchedulerConfiguration{SchedulerAlgorithm: "roundrobin"}},
		"no config":         {},
		"unsupported":       {Config: &api.SchedulerConfiguration{MemoryOversubscriptionEnabled: true}},
	} {
		if err := a.apply(SchedulerConfigType, req); !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("%s: got %v, want ErrBadRequest", name, err)
		}
	}
	got, _ = f.State().SchedulerConfig(nil)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after rejected writes (-want +got):\n%s", diff)
	}
}

func TestSnapshotSchedulerConfig(t *testing.T) {
	src := populated(t)
	a := &applier{t: t, f: src, index: src.State().LatestIndex()}
	a.mustApply(SchedulerConfigType, SchedulerConfigRequest{Config: &api.SchedulerConfiguration{
		SchedulerAlgorithm: api.SchedulerAlgorithmSpread,
		PreemptionConfig:   api.PreemptionConfig{SystemSchedulerEnabled: true, ServiceSchedulerEnabled: true}}})
	dst := New(Config{})
	if err := dst.Restore(io.NopCloser(bytes.NewReader(persist(t, src)))); err != nil {
		t.Fatal(err)
	}
	want, _ := src.State().SchedulerConfig(nil)
	got, _ := dst.State().SchedulerConfig(nil)
	if want == nil || got == nil {
		t.Fatalf("config: src %+v, restored %+v", want, got)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("restored config (-want +got):\n%s", diff)
	}
	if g, w := dst.State().Index("scheduler_config"), src.State().Index("scheduler_config"); g != w || g == 0 {
		t.Errorf("table index: got %d, want %d", g, w)
	}

	// A snapshot written before the record existed (no config set) still
	// restores, and the restored store has no config (defaults apply).
	old := New(Config{})
	if err := old.Restore(io.NopCloser(bytes.NewReader(persist(t, populated(t))))); err != nil {
		t.Fatalf("restore a snapshot without a scheduler config: %v", err)
	}
	if got, err := old.State().SchedulerConfig(nil); err != nil || got != nil {
		t.Errorf("config after restoring an old snapshot: %+v, %v, want nil", got, err)
	}
}
