package api

// Event stream topics.
const (
	TopicJob        = "Job"
	TopicEvaluation = "Evaluation"
	TopicAllocation = "Allocation"
	TopicNode       = "Node"
	TopicDeployment = "Deployment"
	TopicService    = "Service"
	TopicAll        = "*"
)

// Event is a state change, as streamed by GET /v1/event/stream.
type Event struct {
	Topic      string         `json:"Topic"`
	Type       string         `json:"Type"` // e.g. JobRegistered, AllocationUpdated, NodeRegistration
	Key        string         `json:"Key"`
	Namespace  string         `json:"Namespace,omitempty"`
	FilterKeys []string       `json:"FilterKeys,omitempty"`
	Index      uint64         `json:"Index"`
	Payload    map[string]any `json:"Payload"`
}

// Events is one NDJSON line of the stream; an empty object is a heartbeat.
type Events struct {
	Index  uint64  `json:"Index,omitempty"`
	Events []Event `json:"Events,omitempty"`
}

// StreamFrame is one frame of a byte stream such as GET /v1/agent/monitor:
// Data is base64 in JSON, as Nomad's frames.
type StreamFrame struct {
	Data []byte `json:"Data,omitempty"`
}
