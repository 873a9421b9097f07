package http

import (
	"reflect"
	"testing"

	"github.com/drover/drover/api"
)

func TestUnknownFieldsFlattensEmbedded(t *testing.T) {
	got := unknownFields([]byte(`{"NodeID":"n","DrainSpec":{"Deadline":1,"IgnoreSystemJobs":true,"Nope":1},"meta":{"x":1},"Other":2}`),
		reflect.TypeOf(&api.NodeUpdateDrainRequest{}))
	want := []string{"DrainSpec.Nope", "Other"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unknownFields = %v, want %v", got, want)
	}
	got = unknownFields([]byte(`{"ForceDeadline":"2026-01-01T00:00:00Z","Deadline":5,"IgnoreSystemJobs":true}`), reflect.TypeOf(api.DrainStrategy{}))
	if len(got) != 0 {
		t.Errorf("embedded DrainSpec fields flagged: %v", got)
	}
}
