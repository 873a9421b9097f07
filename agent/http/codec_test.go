package http

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/codec/codectest"
)

// notWire are the api package's struct types that are not sent as JSON.
// Score travels only inside Scores, as one member of its JSON object.
var notWire = map[string]bool{"Client": true, "QueryOptions": true, "QueryMeta": true, "WriteOptions": true, "Score": true,
	"NodeIntro": true, "CASConflictError": true} // NodeIntro: what the HTTP layer tells the server, never sent; CASConflictError: the client's error

// wireTypes is every other struct type of the api package.
var wireTypes = []any{
	new(api.ACLAuthMethod),
	new(api.ACLAuthMethodConfig),
	new(api.ACLAuthMethodListStub),
	new(api.ACLBindingRule),
	new(api.ACLOIDCAuthURLRequest),
	new(api.ACLOIDCAuthURLResponse),
	new(api.ACLOIDCCompleteAuthRequest),
	new(api.ACLPolicy),
	new(api.ACLWorkload),
	new(api.NodeIntroRequest),
	new(api.DeviceShare),
	new(api.AllocatedShare),
	new(api.NodeIntroResponse),
	new(api.MIGLayout),
	new(api.MIGProfile),
	new(api.NodeClientMIGResponse),
	new(api.NodeGPU),
	new(api.NodeMIGApplyRequest),
	new(api.NodeInterruptRequest),
	new(api.NodeMIGApplyResponse),
	new(api.NodeMIGChange),
	new(api.NodeMIGInstance),
	new(api.ACLPolicyListStub),
	new(api.ACLResolution),
	new(api.ACLRole),
	new(api.ACLRolePolicyLink),
	new(api.ACLToken),
	new(api.ACLTokenRoleLink),
	new(api.Affinity),
	new(api.AgentHealth),
	new(api.AgentHealthStatus),
	new(api.AgentJoinResponse),
	new(api.AgentMember),
	new(api.AgentSelf),
	new(api.AllocDeploymentStatus),
	new(api.AllocFileInfo),
	new(api.AllocGang),
	new(api.AllocListStub),
	new(api.AllocMetric),
	new(api.AllocResourceUsage),
	new(api.AllocRestartRequest),
	new(api.AllocSignalRequest),
	new(api.AllocStopResponse),
	new(api.AllocatedCpuResources),
	new(api.AllocatedDeviceResource),
	new(api.AllocatedMemoryResources),
	new(api.AllocatedPort),
	new(api.AllocatedResources),
	new(api.AllocatedSharedResources),
	new(api.AllocatedTaskResources),
	new(api.Allocation),
	new(api.Attribute),
	new(api.CheckRestart),
	new(api.CheckResult),
	new(api.ClientHostVolumeConfig),
	new(api.Constraint),
	new(api.Counterfactual),
	new(api.CpuStats),
	new(api.DNSConfig),
	new(api.DefragMove),
	new(api.DefragPlan),
	new(api.Deployment),
	new(api.DeploymentPauseRequest),
	new(api.DeploymentPromoteRequest),
	new(api.DeploymentState),
	new(api.DeploymentStatusUpdate),
	new(api.DeploymentUpdateResponse),
	new(api.DesiredTransition),
	new(api.DesiredUpdates),
	new(api.DeviceLink),
	new(api.DispatchPayloadConfig),
	new(api.DrainMetadata),
	new(api.DrainSpec),
	new(api.DrainStrategy),
	new(api.DriverInfo),
	new(api.EphemeralDisk),
	new(api.Error),
	new(api.ErrorBody),
	new(api.EvalDeleteRequest),
	new(api.EvalDeleteResponse),
	new(api.Evaluation),
	new(api.Event),
	new(api.Events),
	new(api.ExecStreamData),
	new(api.ExecStreamFrame),
	new(api.ExecStreamResult),
	new(api.FieldDiff),
	new(api.GPUUsage),
	new(api.Gang),
	new(api.GangMember),
	new(api.IdentityClaims),
	new(api.Job),
	new(api.JobChildrenSummary),
	new(api.JobDeregisterResponse),
	new(api.JobDiff),
	new(api.JobDispatchRequest),
	new(api.JobDispatchResponse),
	new(api.JobListStub),
	new(api.JobPlanRequest),
	new(api.JobPlanResponse),
	new(api.JobRegisterRequest),
	new(api.JobRegisterResponse),
	new(api.JobRevertRequest),
	new(api.JobScaleRequest),
	new(api.JobScaleStatus),
	new(api.JobSummary),
	new(api.JobVersionsResponse),
	new(api.JobsParseRequest),
	new(api.KeyringRequest),
	new(api.KeyringResponse),
	new(api.LogConfig),
	new(api.MemoryStats),
	new(api.MigrateStrategy),
	new(api.Multiregion),
	new(api.MultiregionRegion),
	new(api.MultiregionStrategy),
	new(api.Namespace),
	new(api.NamespacedID),
	new(api.NetworkResource),
	new(api.Node),
	new(api.NodeAllocFetchRequest),
	new(api.NodeAllocFetchResponse),
	new(api.NodeAllocUpdateRequest),
	new(api.NodeClientAllocsResponse),
	new(api.NodeCpuResources),
	new(api.NodeDevice),
	new(api.NodeDeviceLocality),
	new(api.NodeDeviceResource),
	new(api.NodeDiskResources),
	new(api.NodeEvent),
	new(api.NodeHeartbeatRequest),
	new(api.NodeListStub),
	new(api.NodeMemoryResources),
	new(api.NodeMetaApplyRequest),
	new(api.NodeMetaResponse),
	new(api.NodeNUMANode),
	new(api.NodePool),
	new(api.NodePoolUpsertRequest),
	new(api.NodeRegisterRequest),
	new(api.NodeRegisterResponse),
	new(api.NodeReservedResources),
	new(api.NodeResources),
	new(api.NodeScoreMeta),
	new(api.NodeServicesRequest),
	new(api.NodeServicesResponse),
	new(api.NodeUpdateDrainRequest),
	new(api.NodeUpdateEligibilityRequest),
	new(api.NodeUpdateResponse),
	new(api.ObjectDiff),
	new(api.ParameterizedJobConfig),
	new(api.PendingReason),
	new(api.PeriodicConfig),
	new(api.PeriodicForceResponse),
	new(api.Plan),
	new(api.Placement),
	new(api.PlanAnnotations),
	new(api.PlanGang),
	new(api.PlanResult),
	new(api.Port),
	new(api.PreemptionConfig),
	new(api.Queue),
	new(api.QueueResources),
	new(api.QueueStatus),
	new(api.QueueStatusesAll),
	new(api.QueueUpsertRequest),
	new(api.QueueUpsertResponse),
	new(api.RaftConfiguration),
	new(api.RaftServer),
	new(api.RequestedDevice),
	new(api.RescheduleEvent),
	new(api.ReschedulePolicy),
	new(api.RescheduleTracker),
	new(api.Reservation),
	new(api.ReservedDevice),
	new(api.ReservedNode),
	new(api.ResourceUsage),
	new(api.Resources),
	new(api.RestartPolicy),
	new(api.RootKeyMeta),
	new(api.ScalingPolicy),
	new(api.ScalingPolicyListStub),
	new(api.SchedulerConfiguration),
	new(api.SchedulerConfigurationResponse),
	new(api.SchedulerSetConfigurationResponse),
	new(api.ServerMembers),
	new(api.Service),
	new(api.ServiceCheck),
	new(api.ServiceRegistration),
	new(api.ServiceRegistrationListStub),
	new(api.ServiceRegistrationListStubs),
	new(api.SignedIdentity),
	new(api.SnapshotRestoreResponse),
	new(api.Spread),
	new(api.SpreadTarget),
	new(api.StreamFrame),
	new(api.Task),
	new(api.TaskArtifact),
	new(api.TaskDiff),
	new(api.TaskEvent),
	new(api.TaskGroup),
	new(api.TaskGroupDiff),
	new(api.TaskGroupScaleStatus),
	new(api.TaskGroupSummary),
	new(api.TaskIdentityRequest),
	new(api.TaskIdentityResponse),
	new(api.TaskLifecycle),
	new(api.TaskResourceUsage),
	new(api.TaskState),
	new(api.Template),
	new(api.TerminalSize),
	new(api.Topology),
	new(api.UpdateStrategy),
	new(api.UsageResponse),
	new(api.UsageRow),
	new(api.Variable),
	new(api.VariableLock),
	new(api.VariableMetadata),
	new(api.VolumeMount),
	new(api.VolumeRequest),
	new(api.WorkloadIdentity),
}

// TestResponseCodecMatchesJSON: writeJSON's codec writes every api type,
// with every field set, as encoding/json does (and reads it back the
// same), so the API's answers are what they were before the codec, byte
// for byte. A struct type added to api must be listed in wireTypes.
func TestResponseCodecMatchesJSON(t *testing.T) {
	listed := map[string]bool{}
	for i, v := range wireTypes {
		listed[reflect.TypeOf(v).Elem().Name()] = true
		codectest.Fill(v, i)
		codectest.MatchesJSON(t, v)
	}
	files, err := filepath.Glob("../../api/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("api sources: %v", err)
	}
	var missing []string
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() && !listed[ts.Name.Name] && !notWire[ts.Name.Name] {
					missing = append(missing, ts.Name.Name)
				}
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("api struct types not in wireTypes: %v", missing)
	}
}
