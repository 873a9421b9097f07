package api

// QueueStatus is a queue with what it holds and what it should get
// (GET /v1/queue/{name}; GET /v1/queues lists them).
type QueueStatus struct {
	Queue *Queue `json:"Queue"`
	// Allocated is what the queue's non-terminal allocs hold now (GPUs
	// also by model, e.g. "nvidia/gpu/H100").
	Allocated QueueResources `json:"Allocated"`
	// FairShare is the queue's current water-filled share (nil until the
	// fair-share calculator has run).
	FairShare *QueueResources `json:"FairShare,omitempty"`
	// PendingJobs counts the queue's jobs with allocs waiting to be placed.
	PendingJobs   int `json:"PendingJobs"`
	RunningAllocs int `json:"RunningAllocs"`
}

// Usage groupings (GET /v1/usage?by=).
const (
	UsageByQueue     = "queue"
	UsageByNamespace = "namespace"
	UsageByJob       = "job"
)

// UsageRow is the usage of one key (a queue, a namespace or a
// "namespace/job") in one time bucket.
type UsageRow struct {
	Key string `json:"Key"`
	// Bucket is the bucket's start, Unix seconds (UTC); buckets are an
	// hour long.
	Bucket int64 `json:"Bucket"`
	// GPUSeconds by GPU model ("nvidia/gpu/H100"); a share of a GPU
	// counts its fraction (a quarter of a GPU for an hour: 900).
	GPUSeconds       map[string]float64 `json:"GPUSeconds,omitempty"`
	CPUCoreSeconds   float64            `json:"CPUCoreSeconds"`
	MemoryGiBSeconds float64            `json:"MemoryGiBSeconds"`
	// Cost is GPU hours times the configured price per model (showback);
	// 0 without prices.
	Cost float64 `json:"Cost,omitempty"`
}

// UsageResponse answers GET /v1/usage.
type UsageResponse struct {
	By   string     `json:"By"`
	From int64      `json:"From"` // Unix seconds
	To   int64      `json:"To"`
	Rows []UsageRow `json:"Rows"`
}
