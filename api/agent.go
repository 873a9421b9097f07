package api

// AgentSelf answers GET /v1/agent/self.
type AgentSelf struct {
	Config map[string]any               `json:"config"`
	Member *AgentMember                 `json:"member,omitempty"`
	Stats  map[string]map[string]string `json:"stats,omitempty"`
}

// AgentMember is a server known through gossip (GET /v1/agent/members).
type AgentMember struct {
	Name        string            `json:"Name"`
	Addr        string            `json:"Addr"`
	Port        uint16            `json:"Port"`
	Tags        map[string]string `json:"Tags"`
	Status      string            `json:"Status"` // alive, leaving, left, failed
	ProtocolMin uint8             `json:"ProtocolMin"`
	ProtocolMax uint8             `json:"ProtocolMax"`
	ProtocolCur uint8             `json:"ProtocolCur"`
	DelegateMin uint8             `json:"DelegateMin"`
	DelegateMax uint8             `json:"DelegateMax"`
	DelegateCur uint8             `json:"DelegateCur"`
}

// ServerMembers answers GET /v1/agent/members.
type ServerMembers struct {
	ServerName   string         `json:"ServerName"`
	ServerRegion string         `json:"ServerRegion"`
	ServerDC     string         `json:"ServerDC"`
	Members      []*AgentMember `json:"Members"`
}

// AgentHealth answers GET /v1/agent/health.
type AgentHealth struct {
	Client *AgentHealthStatus `json:"client,omitempty"`
	Server *AgentHealthStatus `json:"server,omitempty"`
}

// AgentHealthStatus is one role's health.
type AgentHealthStatus struct {
	Ok      bool   `json:"ok"`
	Message string `json:"message"`
}

// RaftServer is one peer (GET /v1/operator/raft/configuration).
type RaftServer struct {
	ID           string `json:"ID"`
	Node         string `json:"Node"`
	Address      string `json:"Address"`
	Leader       bool   `json:"Leader"`
	Voter        bool   `json:"Voter"`
	RaftProtocol string `json:"RaftProtocol"`
}

// RaftConfiguration lists the peers.
type RaftConfiguration struct {
	Servers []*RaftServer `json:"Servers"`
	Index   uint64        `json:"Index"`
}
