package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Response headers of blocking queries.
const (
	HeaderIndex       = "X-Drover-Index"
	HeaderKnownLeader = "X-Drover-KnownLeader"
	HeaderLastContact = "X-Drover-LastContact"
)

// DefaultAddress is used when neither -address nor DROVER_ADDR is set.
const DefaultAddress = "http://127.0.0.1:4646"

// Client talks to a drover agent's REST API. Safe for concurrent use.
type Client struct {
	Address string // http://host:port
	HTTP    *http.Client
	// Headers are added to every request (e.g. the node secret).
	Headers http.Header
	// Namespace is sent with every request that names none in its
	// options ("" = the server's default namespace).
	Namespace string
	// Region, when set, is sent with every request ("region" parameter):
	// an agent of another region forwards the request to a server of this
	// one (the CLI: -region, DROVER_REGION or NOMAD_REGION).
	Region string
	// Token is the ACL token's SecretID sent with every request
	// (the CLI: -token, DROVER_TOKEN or NOMAD_TOKEN).
	Token string
	// JSON, when set, encodes request bodies and decodes answers in
	// place of encoding/json: the client agent and the node simulator
	// plug in the servers' faster codec (this package keeps to the
	// standard library).
	JSON Codec
}

// Codec is a JSON codec that behaves as encoding/json's Marshal and
// Unmarshal.
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// NewClient returns a client for address ("" = DROVER_ADDR or the default).
func NewClient(address string) *Client {
	if address == "" {
		address = os.Getenv("DROVER_ADDR")
	}
	if address == "" {
		address = DefaultAddress
	}
	if !strings.Contains(address, "://") {
		address = "http://" + address
	}
	return &Client{Address: strings.TrimRight(address, "/"), HTTP: &http.Client{}}
}

// QueryOptions shape reads.
type QueryOptions struct {
	Namespace  string
	Prefix     string
	WaitIndex  uint64        // blocking query: return once the index exceeds this
	WaitTime   time.Duration // how long to block (server caps it)
	AllowStale bool
	Consistent bool
	Params     map[string]string
}

// QueryMeta comes back with every read.
type QueryMeta struct {
	LastIndex   uint64
	KnownLeader bool
	LastContact time.Duration
}

// WriteOptions shape writes.
type WriteOptions struct {
	Namespace string
	Params    map[string]string
}

func (o *QueryOptions) values() url.Values {
	v := url.Values{}
	if o == nil {
		return v
	}
	if o.Namespace != "" {
		v.Set("namespace", o.Namespace)
	}
	if o.Prefix != "" {
		v.Set("prefix", o.Prefix)
	}
	if o.WaitIndex > 0 {
		v.Set("index", strconv.FormatUint(o.WaitIndex, 10))
	}
	if o.WaitTime > 0 {
		v.Set("wait", o.WaitTime.String())
	}
	if o.AllowStale {
		v.Set("stale", "")
	}
	if o.Consistent {
		v.Set("consistent", "")
	}
	for k, val := range o.Params {
		v.Set(k, val)
	}
	return v
}

func (o *WriteOptions) values() url.Values {
	v := url.Values{}
	if o == nil {
		return v
	}
	if o.Namespace != "" {
		v.Set("namespace", o.Namespace)
	}
	for k, val := range o.Params {
		v.Set(k, val)
	}
	return v
}

// Raw performs a request and returns the response for the caller to read
// and close; a non-2xx status is decoded into an *Error.
func (c *Client) Raw(ctx context.Context, method, path string, q url.Values, body any) (*http.Response, error) {
	if c.Namespace != "" && q.Get("namespace") == "" {
		if q == nil {
			q = url.Values{}
		}
		q.Set("namespace", c.Namespace)
	}
	if c.Region != "" && q.Get("region") == "" {
		if q == nil {
			q = url.Values{}
		}
		q.Set("region", c.Region)
	}
	var rd io.Reader
	if body != nil {
		if r, ok := body.(io.Reader); ok {
			rd = r
		} else {
			marshal := json.Marshal
			if c.JSON != nil {
				marshal = c.JSON.Marshal
			}
			b, err := marshal(body)
			if err != nil {
				return nil, fmt.Errorf("encode request: %w", err)
			}
			rd = bytes.NewReader(b)
		}
	}
	u := c.Address + path
	if len(q) > 0 {
		u += "?" + strings.ReplaceAll(q.Encode(), "=&", "&")
		u = strings.TrimSuffix(u, "=")
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range c.Headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if c.Token != "" && req.Header.Get(HeaderToken) == "" {
		req.Header.Set(HeaderToken, c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp, nil
}

func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var eb ErrorBody
	if json.Unmarshal(b, &eb) == nil && eb.Error != nil && eb.Error.Code != "" {
		eb.Error.Status = resp.StatusCode
		eb.Error.body = b
		return eb.Error
	}
	return &Error{Code: "http_" + strconv.Itoa(resp.StatusCode), Status: resp.StatusCode,
		Message: fmt.Sprintf("unexpected response %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))}
}

// Query GETs path into out and returns the blocking-query metadata.
func (c *Client) Query(ctx context.Context, path string, out any, o *QueryOptions) (*QueryMeta, error) {
	resp, err := c.Raw(ctx, http.MethodGet, path, o.values(), nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if out != nil {
		if err := c.decode(resp, out); err != nil {
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
	}
	return parseQueryMeta(resp), nil
}

func parseQueryMeta(resp *http.Response) *QueryMeta {
	m := &QueryMeta{}
	m.LastIndex, _ = strconv.ParseUint(resp.Header.Get(HeaderIndex), 10, 64)
	m.KnownLeader = resp.Header.Get(HeaderKnownLeader) == "true"
	if ms, err := strconv.ParseInt(resp.Header.Get(HeaderLastContact), 10, 64); err == nil {
		m.LastContact = time.Duration(ms) * time.Millisecond
	}
	return m
}

// Write sends body with method to path and decodes the answer into out.
func (c *Client) Write(ctx context.Context, method, path string, body, out any, o *WriteOptions) error {
	resp, err := c.Raw(ctx, method, path, o.values(), body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := c.decode(resp, out); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}

// decode reads an answer's JSON into out.
func (c *Client) decode(resp *http.Response, out any) error {
	if c.JSON == nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	var buf bytes.Buffer
	if n := resp.ContentLength; n > 0 && n < 64<<20 {
		buf.Grow(int(n) + bytes.MinRead) // one read to EOF, no regrowth
	}
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return err
	}
	return c.JSON.Unmarshal(buf.Bytes(), out)
}

func esc(s string) string { return url.PathEscape(s) }

// ---- jobs ----

// Jobs lists jobs.
func (c *Client) Jobs(ctx context.Context, o *QueryOptions) ([]*JobListStub, *QueryMeta, error) {
	var out []*JobListStub
	m, err := c.Query(ctx, "/v1/jobs", &out, o)
	return out, m, err
}

// Job reads one job.
func (c *Client) Job(ctx context.Context, id string, o *QueryOptions) (*Job, *QueryMeta, error) {
	var out Job
	m, err := c.Query(ctx, "/v1/job/"+esc(id), &out, o)
	if err != nil {
		return nil, nil, err
	}
	return &out, m, nil
}

// RegisterJob submits a job (PUT /v1/jobs).
func (c *Client) RegisterJob(ctx context.Context, req *JobRegisterRequest, o *WriteOptions) (*JobRegisterResponse, error) {
	var out JobRegisterResponse
	return &out, c.Write(ctx, http.MethodPut, "/v1/jobs", req, &out, o)
}

// DeregisterJob stops (and with purge removes) a job.
func (c *Client) DeregisterJob(ctx context.Context, id string, purge bool, o *WriteOptions) (*JobDeregisterResponse, error) {
	if purge {
		if o == nil {
			o = &WriteOptions{}
		}
		if o.Params == nil {
			o.Params = map[string]string{}
		}
		o.Params["purge"] = "true"
	}
	var out JobDeregisterResponse
	return &out, c.Write(ctx, http.MethodDelete, "/v1/job/"+esc(id), nil, &out, o)
}

// PlanJob dry-runs the scheduler for a job.
func (c *Client) PlanJob(ctx context.Context, req *JobPlanRequest, o *WriteOptions) (*JobPlanResponse, error) {
	var out JobPlanResponse
	return &out, c.Write(ctx, http.MethodPost, "/v1/job/"+esc(req.Job.ID)+"/plan", req, &out, o)
}

// EvaluateJob forces a new evaluation.
func (c *Client) EvaluateJob(ctx context.Context, id string, o *WriteOptions) (*JobEvaluateResponse, error) {
	var out JobEvaluateResponse
	return &out, c.Write(ctx, http.MethodPost, "/v1/job/"+esc(id)+"/evaluate", struct{}{}, &out, o)
}

// JobAllocations lists a job's allocations.
func (c *Client) JobAllocations(ctx context.Context, id string, o *QueryOptions) ([]*AllocListStub, *QueryMeta, error) {
	var out []*AllocListStub
	m, err := c.Query(ctx, "/v1/job/"+esc(id)+"/allocations", &out, o)
	return out, m, err
}

// JobEvaluations lists a job's evaluations.
func (c *Client) JobEvaluations(ctx context.Context, id string, o *QueryOptions) ([]*Evaluation, *QueryMeta, error) {
	var out []*Evaluation
	m, err := c.Query(ctx, "/v1/job/"+esc(id)+"/evaluations", &out, o)
	return out, m, err
}

// JobVersions lists a job's versions, newest first.
func (c *Client) JobVersions(ctx context.Context, id string, diffs bool, o *QueryOptions) (*JobVersionsResponse, *QueryMeta, error) {
	if diffs {
		if o == nil {
			o = &QueryOptions{}
		}
		if o.Params == nil {
			o.Params = map[string]string{}
		}
		o.Params["diffs"] = "true"
	}
	var out JobVersionsResponse
	m, err := c.Query(ctx, "/v1/job/"+esc(id)+"/versions", &out, o)
	return &out, m, err
}

// JobSummary reads a job's summary.
func (c *Client) JobSummary(ctx context.Context, id string, o *QueryOptions) (*JobSummary, *QueryMeta, error) {
	var out JobSummary
	m, err := c.Query(ctx, "/v1/job/"+esc(id)+"/summary", &out, o)
	return &out, m, err
}

// ParseJob converts HCL to a job on the server (POST /v1/jobs/parse).
func (c *Client) ParseJob(ctx context.Context, req *JobsParseRequest) (*Job, error) {
	var out Job
	return &out, c.Write(ctx, http.MethodPost, "/v1/jobs/parse", req, &out, nil)
}

// ---- nodes ----

// Nodes lists nodes.
func (c *Client) Nodes(ctx context.Context, o *QueryOptions) ([]*NodeListStub, *QueryMeta, error) {
	var out []*NodeListStub
	m, err := c.Query(ctx, "/v1/nodes", &out, o)
	return out, m, err
}

// Node reads one node.
func (c *Client) Node(ctx context.Context, id string, o *QueryOptions) (*Node, *QueryMeta, error) {
	var out Node
	m, err := c.Query(ctx, "/v1/node/"+esc(id), &out, o)
	if err != nil {
		return nil, nil, err
	}
	return &out, m, nil
}

// NodeAllocations lists the full allocations on a node (clients watch this).
func (c *Client) NodeAllocations(ctx context.Context, id string, o *QueryOptions) ([]*Allocation, *QueryMeta, error) {
	var out []*Allocation
	m, err := c.Query(ctx, "/v1/node/"+esc(id)+"/allocations", &out, o)
	return out, m, err
}

// NodeClientAllocs long-polls the IDs and AllocModifyIndexes of a node's
// allocs (what clients watch); NodeFetchAllocs gets some of them in full.
func (c *Client) NodeClientAllocs(ctx context.Context, id string, o *QueryOptions) (*NodeClientAllocsResponse, *QueryMeta, error) {
	var out NodeClientAllocsResponse
	m, err := c.Query(ctx, "/v1/node/"+esc(id)+"/client-allocs", &out, o)
	return &out, m, err
}

// NodeFetchAllocs gets the named allocs of the node in full, from a state
// at or past minIndex (0: any; NodeAllocFetchRequest.MinIndex), as a client
// runs them: a Compact fetch, expanded (placement Metrics are not sent).
func (c *Client) NodeFetchAllocs(ctx context.Context, id string, allocIDs []string, minIndex uint64) ([]*Allocation, error) {
	var out NodeAllocFetchResponse
	if err := c.Write(ctx, http.MethodPost, "/v1/node/"+esc(id)+"/allocations/fetch",
		&NodeAllocFetchRequest{AllocIDs: allocIDs, Compact: true, MinIndex: minIndex}, &out, nil); err != nil {
		return nil, err
	}
	return out.Allocs, out.Expand()
}

// UpdateNodeDrain enables (spec != nil) or disables a drain.
func (c *Client) UpdateNodeDrain(ctx context.Context, id string, spec *DrainSpec, markEligible bool) (*NodeUpdateResponse, error) {
	var out NodeUpdateResponse
	return &out, c.Write(ctx, http.MethodPost, "/v1/node/"+esc(id)+"/drain",
		&NodeUpdateDrainRequest{NodeID: id, DrainSpec: spec, MarkEligible: markEligible}, &out, nil)
}

// UpdateNodeEligibility sets eligible/ineligible.
func (c *Client) UpdateNodeEligibility(ctx context.Context, id, eligibility string) (*NodeUpdateResponse, error) {
	var out NodeUpdateResponse
	return &out, c.Write(ctx, http.MethodPost, "/v1/node/"+esc(id)+"/eligibility",
		&NodeUpdateEligibilityRequest{NodeID: id, Eligibility: eligibility}, &out, nil)
}

// RegisterNode registers or updates a client node (client -> server).
func (c *Client) RegisterNode(ctx context.Context, n *Node) (*NodeRegisterResponse, error) {
	return c.RegisterNodeRequest(ctx, &NodeRegisterRequest{Node: n})
}

// RegisterNodeRequest registers a node with its introduction token.
func (c *Client) RegisterNodeRequest(ctx context.Context, req *NodeRegisterRequest) (*NodeRegisterResponse, error) {
	var out NodeRegisterResponse
	return &out, c.Write(ctx, http.MethodPut, "/v1/node/register", req, &out, nil)
}

// CreateNodeIntro asks for an introduction token for new nodes (node write).
func (c *Client) CreateNodeIntro(ctx context.Context, req *NodeIntroRequest) (*NodeIntroResponse, error) {
	var out NodeIntroResponse
	return &out, c.Write(ctx, http.MethodPut, "/v1/node/intro", req, &out, nil)
}

// HeartbeatNode renews a node's TTL; c.Headers must carry NodeSecretHeader.
func (c *Client) HeartbeatNode(ctx context.Context, id string, req *NodeHeartbeatRequest) (*NodeRegisterResponse, error) {
	var out NodeRegisterResponse
	return &out, c.Write(ctx, http.MethodPut, "/v1/node/"+esc(id)+"/heartbeat", req, &out, nil)
}

// UpdateAllocsFromClient sends a batch of client alloc updates.
func (c *Client) UpdateAllocsFromClient(ctx context.Context, nodeID string, allocs []*Allocation) error {
	return c.Write(ctx, http.MethodPut, "/v1/node/"+esc(nodeID)+"/allocations/update",
		&NodeAllocUpdateRequest{Allocs: allocs}, nil, nil)
}

// ---- allocations and evaluations ----

// Allocations lists allocations.
func (c *Client) Allocations(ctx context.Context, o *QueryOptions) ([]*AllocListStub, *QueryMeta, error) {
	var out []*AllocListStub
	m, err := c.Query(ctx, "/v1/allocations", &out, o)
	return out, m, err
}

// Allocation reads one allocation (an unambiguous ID prefix works too).
func (c *Client) Allocation(ctx context.Context, id string, o *QueryOptions) (*Allocation, *QueryMeta, error) {
	var out Allocation
	m, err := c.Query(ctx, "/v1/allocation/"+esc(id), &out, o)
	if err != nil {
		return nil, nil, err
	}
	return &out, m, nil
}

// StopAllocation stops (and reschedules) an allocation.
func (c *Client) StopAllocation(ctx context.Context, id string) (*AllocStopResponse, error) {
	var out AllocStopResponse
	return &out, c.Write(ctx, http.MethodPost, "/v1/allocation/"+esc(id)+"/stop", struct{}{}, &out, nil)
}

// Evaluations lists evaluations.
func (c *Client) Evaluations(ctx context.Context, o *QueryOptions) ([]*Evaluation, *QueryMeta, error) {
	var out []*Evaluation
	m, err := c.Query(ctx, "/v1/evaluations", &out, o)
	return out, m, err
}

// Evaluation reads one evaluation.
func (c *Client) Evaluation(ctx context.Context, id string, o *QueryOptions) (*Evaluation, *QueryMeta, error) {
	var out Evaluation
	m, err := c.Query(ctx, "/v1/evaluation/"+esc(id), &out, o)
	if err != nil {
		return nil, nil, err
	}
	return &out, m, nil
}

// ---- status and agent ----

// Leader returns the leader's Raft address ("" when none).
func (c *Client) Leader(ctx context.Context) (string, error) {
	var out string
	_, err := c.Query(ctx, "/v1/status/leader", &out, nil)
	return out, err
}

// Peers returns the Raft peers' addresses.
func (c *Client) Peers(ctx context.Context) ([]string, error) {
	var out []string
	_, err := c.Query(ctx, "/v1/status/peers", &out, nil)
	return out, err
}

// AgentSelf describes the agent answering.
func (c *Client) AgentSelf(ctx context.Context) (*AgentSelf, error) {
	var out AgentSelf
	_, err := c.Query(ctx, "/v1/agent/self", &out, nil)
	return &out, err
}

// Members lists servers known through gossip.
func (c *Client) Members(ctx context.Context) (*ServerMembers, error) {
	var out ServerMembers
	_, err := c.Query(ctx, "/v1/agent/members", &out, nil)
	return &out, err
}

// ---- client (per-node) endpoints ----

// AllocStats reads live resource usage of an allocation.
func (c *Client) AllocStats(ctx context.Context, allocID string) (*AllocResourceUsage, error) {
	var out AllocResourceUsage
	_, err := c.Query(ctx, "/v1/client/allocation/"+esc(allocID)+"/stats", &out, nil)
	return &out, err
}

// Logs opens a task's log (plain text). follow streams until ctx ends.
func (c *Client) Logs(ctx context.Context, allocID, task, typ string, follow bool, origin string, offset int64) (io.ReadCloser, error) {
	q := url.Values{}
	q.Set("task", task)
	q.Set("type", typ)
	q.Set("plain", "true")
	q.Set("follow", strconv.FormatBool(follow))
	if origin != "" {
		q.Set("origin", origin)
	}
	if offset != 0 {
		q.Set("offset", strconv.FormatInt(offset, 10))
	}
	resp, err := c.Raw(ctx, http.MethodGet, "/v1/client/fs/logs/"+esc(allocID), q, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// FSList lists a directory of an alloc dir.
func (c *Client) FSList(ctx context.Context, allocID, path string) ([]*AllocFileInfo, error) {
	var out []*AllocFileInfo
	_, err := c.Query(ctx, "/v1/client/fs/ls/"+esc(allocID), &out, &QueryOptions{Params: map[string]string{"path": path}})
	return out, err
}

// FSCat reads a file of an alloc dir.
func (c *Client) FSCat(ctx context.Context, allocID, path string) (io.ReadCloser, error) {
	resp, err := c.Raw(ctx, http.MethodGet, "/v1/client/fs/cat/"+esc(allocID), url.Values{"path": {path}}, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// RestartAlloc restarts a task (or all tasks) of an allocation.
func (c *Client) RestartAlloc(ctx context.Context, allocID string, req *AllocRestartRequest) error {
	return c.Write(ctx, http.MethodPut, "/v1/client/allocation/"+esc(allocID)+"/restart", req, nil, nil)
}

// SignalAlloc signals a task (or all tasks) of an allocation.
func (c *Client) SignalAlloc(ctx context.Context, allocID string, req *AllocSignalRequest) error {
	return c.Write(ctx, http.MethodPut, "/v1/client/allocation/"+esc(allocID)+"/signal", req, nil, nil)
}
