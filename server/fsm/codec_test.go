package fsm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/codec"
	"github.com/drover/drover/internal/codec/codectest"
	"github.com/drover/drover/server/state"
)

// entryTypes are the bodies of every message type Apply decodes.
func entryTypes() map[MessageType]reflect.Type {
	return map[MessageType]reflect.Type{
		JobRegisterType: reflect.TypeFor[JobRegisterRequest](), JobDeregisterType: reflect.TypeFor[JobDeregisterRequest](),
		EvalUpdateType: reflect.TypeFor[EvalUpdateRequest](), EvalDeleteType: reflect.TypeFor[EvalDeleteRequest](),
		NodeRegisterType: reflect.TypeFor[NodeRegisterRequest](), NodeDeregisterType: reflect.TypeFor[NodeDeregisterRequest](),
		NodeStatusUpdateType: reflect.TypeFor[NodeStatusUpdateRequest](), NodeDrainUpdateType: reflect.TypeFor[NodeDrainUpdateRequest](),
		NodeEligibilityUpdateType: reflect.TypeFor[NodeEligibilityUpdateRequest](), AllocClientUpdateType: reflect.TypeFor[AllocClientUpdateRequest](),
		AllocDesiredTransitionType: reflect.TypeFor[AllocDesiredTransitionRequest](), ApplyPlanResultsType: reflect.TypeFor[ApplyPlanResultsRequest](),
		DeploymentUpsertType: reflect.TypeFor[DeploymentUpsertRequest](), AllocUpsertType: reflect.TypeFor[AllocUpsertRequest](),
		JobStabilityType: reflect.TypeFor[JobStabilityRequest](), DeploymentUpdateType: reflect.TypeFor[DeploymentUpdateRequest](),
		SchedulerConfigType: reflect.TypeFor[SchedulerConfigRequest](), NodePoolUpsertType: reflect.TypeFor[NodePoolUpsertRequest](),
		NodePoolDeleteType: reflect.TypeFor[NodePoolDeleteRequest](), QueueUpsertType: reflect.TypeFor[QueueUpsertRequest](),
		QueueDeleteType: reflect.TypeFor[QueueDeleteRequest](), NamespaceUpsertType: reflect.TypeFor[NamespaceUpsertRequest](),
		NamespaceDeleteType: reflect.TypeFor[NamespaceDeleteRequest](), ServiceUpdateType: reflect.TypeFor[ServiceUpdateRequest](),
		RootKeyUpsertType: reflect.TypeFor[RootKeyUpsertRequest](), ACLWriteType: reflect.TypeFor[state.ACLWrite](),
		NodeMIGUpdateType: reflect.TypeFor[NodeMIGUpdateRequest](), VariableApplyType: reflect.TypeFor[VariableApplyRequest](),
	}
}

// TestEntryCodecMatchesJSON: for every command, with every field set,
// the entry codec writes and reads the body as encoding/json does
// (codectest.MatchesJSON), and an entry Encode wrote, small or
// compressed, decodes (Decode, decodeBody, and decode into a reused
// buffer) to that value. Entries of
// earlier versions (encoding/json, uncompressed) so stay readable, and
// nothing is dropped or changed on the way through Raft.
func TestEntryCodecMatchesJSON(t *testing.T) {
	types := entryTypes()
	if len(types) != len(typeNames) {
		t.Fatalf("%d body types for %d message types: add the new type here", len(types), len(typeNames))
	}
	var scratch []byte // one decode buffer for every entry, as Apply's pool reuses them
	for typ, rt := range types {
		for _, big := range []bool{false, true} {
			v := reflect.New(rt).Interface()
			codectest.Fill(v, int(typ))
			if r, ok := v.(*ApplyPlanResultsRequest); ok && big { // past compressAbove
				for i := range 40 {
					r.AllocsPlaced = append(r.AllocsPlaced, codectest.Filled[api.Allocation](i))
				}
			}
			plain := codectest.MatchesJSON(t, v)
			entry, err := Encode(typ, v)
			if err != nil {
				t.Fatalf("%v: encode: %v", typ, err)
			}
			long := len(envelopeHead)+len(plain)+1 > compressAbove
			if compressed := entry[1] == compressedMark; compressed != long {
				t.Errorf("%v (big %v): %d-byte entry compressed: %v", typ, big, len(entry), compressed)
			}
			gotType, body, err := Decode(entry)
			if err != nil || gotType != typ {
				t.Fatalf("%v: decode: %v, %v", typ, gotType, err)
			}
			if !bytes.Equal(body, plain) {
				t.Errorf("%v (big %v): the entry's body is not the value's JSON", typ, big)
			}
			if _, reused, err := decode(entry, &scratch); err != nil || !bytes.Equal(reused, plain) {
				t.Errorf("%v (big %v): decoded into a reused buffer: %v; body is the value's JSON: %v", typ, big, err, bytes.Equal(reused, plain))
			}
			got, want := reflect.New(rt).Interface(), reflect.New(rt).Interface()
			if err := codec.Unmarshal(body, got); err != nil {
				t.Fatalf("%v: decode body: %v", typ, err)
			}
			if err := json.Unmarshal(plain, want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty(), cmp.AllowUnexported(api.Job{})); diff != "" {
				t.Errorf("%v (big %v): decoded entry differs (-json +entry):\n%s", typ, big, diff)
			}
		}
	}
}

// TestEntryCompressionBound: an envelope that would compress more than
// maxCompressRatio times is written as it is, and Decode refuses a block
// that claims to expand more (a few bytes must not allocate gigabytes).
func TestEntryCompressionBound(t *testing.T) {
	j := job("web")
	j.Meta = map[string]string{"pad": strings.Repeat(" ", 4<<20)}
	entry, err := Encode(JobRegisterType, JobRegisterRequest{Job: j})
	if err != nil {
		t.Fatal(err)
	}
	if entry[1] == compressedMark {
		t.Errorf("a %d:1 compressible entry was compressed", maxCompressRatio*2)
	}
	if _, body, err := Decode(entry); err != nil || !bytes.Contains(body, []byte(j.Meta["pad"])) {
		t.Errorf("uncompressed large entry: %v", err)
	}
	claim := binary.AppendUvarint([]byte{byte(JobRegisterType), compressedMark}, 1<<30)
	if _, _, err := Decode(append(claim, 0, 0, 0, 0)); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("a block claiming 1 GiB from 4 bytes: %v, want ErrBadRequest", err)
	}
}
