package api

// QueueStatus is a queue with what it holds and what it should get
// (GET /v1/queue/{name}; GET /v1/queues lists them).
type QueueStatus struct {
	Queue *Queue `json:"Queue"`
	// Region is the region whose queue this is, set in answers over every
	// region (GET /v1/queues?region=all); "" otherwise.
	Region string `json:"Region,omitempty"`
	// Allocated is what the queue's non-terminal allocs hold now (GPUs
	// also by model, e.g. "nvidia/gpu/H100").
	Allocated QueueResources `json:"Allocated"`
	// FairShare is the queue's current water-filled share (nil until the
	// fair-share calculator has run).
	FairShare *QueueResources `json:"FairShare,omitempty"`
	// PendingJobs counts the queue's jobs with allocs waiting to be placed.
	PendingJobs   int `json:"PendingJobs"`
	RunningAllocs int `json:"RunningAllocs"`
	// GPUsUsed is the GPUs' worth of utilization of the queue's live
	// allocs (each alloc's GPUs times its mean utilization; allocs without
	// a reading count nothing), against Allocated.GPUs.
	GPUsUsed float64 `json:"GPUsUsed,omitempty"`
	// GPUIdleAllocs counts the queue's live allocs whose GPUs are idle
	// (api.GPUUsage.IdleSince set), however long.
	GPUIdleAllocs int `json:"GPUIdleAllocs,omitempty"`
}

// QueueStatusesAll answers GET /v1/queues?region=all: every region's
// queues (each with its Region), and which regions did not answer.
type QueueStatusesAll struct {
	Queues  []*QueueStatus `json:"Queues"`
	Partial bool           `json:"Partial,omitempty"`
	Missing []string       `json:"Missing,omitempty"`
}

// RegionAll as a request's region (?region=all) asks every region, for
// the read-only global views (usage, queues).
const RegionAll = "all"

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
	// Region is the region whose ledger holds the row, set in answers
	// over every region (?region=all); "" otherwise.
	Region string `json:"Region,omitempty"`
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
	// Partial is set in an answer over every region (?region=all) when
	// the regions of Missing did not answer: their rows are absent.
	Partial bool     `json:"Partial,omitempty"`
	Missing []string `json:"Missing,omitempty"`
}
