package api

import "time"

// ACL objects, in Nomad's JSON shapes (/v1/acl/*). Policies are HCL rule
// sets; tokens carry policies and roles; roles group policies; auth
// methods (OIDC, JWT) and binding rules turn an outside identity into a
// token. Secrets (a token's SecretID, an auth method's client secret) are
// shown only to management tokens and to the token's own holder.

// HeaderToken carries an ACL token's SecretID (X-Nomad-Token and
// Authorization: Bearer are accepted too).
const HeaderToken = "X-Drover-Token"

// WebSocketTokenProtocol prefixes the token a browser offers as a
// websocket subprotocol ("drover.token.SECRET", next to
// WebSocketExecProtocol), since it cannot set headers on a websocket.
const (
	WebSocketTokenProtocol = "drover.token."
	WebSocketExecProtocol  = "drover.exec"
)

// ACL token types.
const (
	ACLTokenManagement = "management"
	ACLTokenClient     = "client"
)

// ACLPolicy is a named set of rules, written in HCL:
//
//	namespace "ml" { policy = "write" capabilities = ["alloc-exec"] }
//	node { policy = "read" }
//	agent { policy = "read" }
//	operator { policy = "read" }
//	queue "research" { policy = "write" }
type ACLPolicy struct {
	Name        string `json:"Name"`
	Description string `json:"Description,omitempty"`
	Rules       string `json:"Rules"`
	CreateIndex uint64 `json:"CreateIndex"`
	ModifyIndex uint64 `json:"ModifyIndex"`
}

// ACLPolicyListStub is a policy in a list.
type ACLPolicyListStub struct {
	Name        string `json:"Name"`
	Description string `json:"Description,omitempty"`
	CreateIndex uint64 `json:"CreateIndex"`
	ModifyIndex uint64 `json:"ModifyIndex"`
}

// ACLTokenRoleLink names a role a token holds (by ID or name).
type ACLTokenRoleLink struct {
	ID   string `json:"ID,omitempty"`
	Name string `json:"Name,omitempty"`
}

// ACLToken is a credential: AccessorID names it, SecretID is the bearer
// secret sent in X-Drover-Token, X-Nomad-Token or Authorization: Bearer.
type ACLToken struct {
	AccessorID string              `json:"AccessorID"`
	SecretID   string              `json:"SecretID,omitempty"`
	Name       string              `json:"Name,omitempty"`
	Type       string              `json:"Type"`
	Policies   []string            `json:"Policies,omitempty"`
	Roles      []*ACLTokenRoleLink `json:"Roles,omitempty"`
	Global     bool                `json:"Global,omitempty"`
	// ExpirationTTL asks for an expiry at creation; ExpirationTime is the
	// instant the token stops working (nil: never).
	ExpirationTTL  time.Duration `json:"ExpirationTTL,omitempty"`
	ExpirationTime *time.Time    `json:"ExpirationTime,omitempty"`
	CreateTime     time.Time     `json:"CreateTime"`
	// AuthMethod names the auth method that minted the token ("" for
	// tokens created directly).
	AuthMethod  string `json:"AuthMethod,omitempty"`
	CreateIndex uint64 `json:"CreateIndex"`
	ModifyIndex uint64 `json:"ModifyIndex"`
}

// ACLRolePolicyLink names a policy of a role.
type ACLRolePolicyLink struct {
	Name string `json:"Name"`
}

// ACLRole groups policies under a name tokens and binding rules refer to.
type ACLRole struct {
	ID          string               `json:"ID"`
	Name        string               `json:"Name"`
	Description string               `json:"Description,omitempty"`
	Policies    []*ACLRolePolicyLink `json:"Policies"`
	CreateIndex uint64               `json:"CreateIndex"`
	ModifyIndex uint64               `json:"ModifyIndex"`
}

// Auth method types.
const (
	ACLAuthMethodTypeOIDC = "OIDC"
	ACLAuthMethodTypeJWT  = "JWT"
)

// ACLAuthMethod is an outside identity provider tokens are minted from.
type ACLAuthMethod struct {
	Name            string               `json:"Name"`
	Type            string               `json:"Type"`
	DisplayName     string               `json:"DisplayName,omitempty"`
	TokenLocality   string               `json:"TokenLocality,omitempty"`
	TokenNameFormat string               `json:"TokenNameFormat,omitempty"`
	MaxTokenTTL     time.Duration        `json:"MaxTokenTTL"`
	Default         bool                 `json:"Default,omitempty"`
	Config          *ACLAuthMethodConfig `json:"Config"`
	CreateTime      time.Time            `json:"CreateTime"`
	ModifyTime      time.Time            `json:"ModifyTime"`
	CreateIndex     uint64               `json:"CreateIndex"`
	ModifyIndex     uint64               `json:"ModifyIndex"`
}

// ACLAuthMethodConfig holds the provider settings of an auth method.
type ACLAuthMethodConfig struct {
	OIDCDiscoveryURL     string            `json:"OIDCDiscoveryURL,omitempty"`
	OIDCClientID         string            `json:"OIDCClientID,omitempty"`
	OIDCClientSecret     string            `json:"OIDCClientSecret,omitempty"`
	OIDCScopes           []string          `json:"OIDCScopes,omitempty"`
	BoundAudiences       []string          `json:"BoundAudiences,omitempty"`
	BoundIssuer          []string          `json:"BoundIssuer,omitempty"`
	AllowedRedirectURIs  []string          `json:"AllowedRedirectURIs,omitempty"`
	DiscoveryCaPem       []string          `json:"DiscoveryCaPem,omitempty"`
	SigningAlgs          []string          `json:"SigningAlgs,omitempty"`
	JWKSURL              string            `json:"JWKSURL,omitempty"`
	JWTValidationPubKeys []string          `json:"JWTValidationPubKeys,omitempty"`
	ClaimMappings        map[string]string `json:"ClaimMappings,omitempty"`
	ListClaimMappings    map[string]string `json:"ListClaimMappings,omitempty"`
}

// ACLAuthMethodListStub is an auth method in a list.
type ACLAuthMethodListStub struct {
	Name        string `json:"Name"`
	Type        string `json:"Type"`
	DisplayName string `json:"DisplayName,omitempty"`
	Default     bool   `json:"Default,omitempty"`
	CreateIndex uint64 `json:"CreateIndex"`
	ModifyIndex uint64 `json:"ModifyIndex"`
}

// Binding rule bind types.
const (
	ACLBindTypeRole       = "role"
	ACLBindTypePolicy     = "policy"
	ACLBindTypeManagement = "management"
)

// ACLBindingRule maps identities of an auth method (Selector, a go-bexpr
// expression over the mapped claims) to a role, a policy or management.
type ACLBindingRule struct {
	ID          string    `json:"ID"`
	Description string    `json:"Description,omitempty"`
	AuthMethod  string    `json:"AuthMethod"`
	Selector    string    `json:"Selector,omitempty"`
	BindType    string    `json:"BindType"`
	BindName    string    `json:"BindName,omitempty"`
	CreateTime  time.Time `json:"CreateTime"`
	ModifyTime  time.Time `json:"ModifyTime"`
	CreateIndex uint64    `json:"CreateIndex"`
	ModifyIndex uint64    `json:"ModifyIndex"`
}

// ACLResolution is what GET /v1/acl/resolve answers for the request's own
// secret: whether it is a management token or a node's secret (NodeID),
// else the rules of its policies (roles expanded). A client-only agent
// compiles them to enforce ACLs on its own routes.
type ACLResolution struct {
	Management     bool       `json:"Management"`
	NodeID         string     `json:"NodeID,omitempty"`
	Rules          []string   `json:"Rules,omitempty"`
	AccessorID     string     `json:"AccessorID,omitempty"`
	ExpirationTime *time.Time `json:"ExpirationTime,omitempty"`
	// Workload: the secret is a task's workload identity (read and list
	// on its own variables, nothing else).
	Workload *ACLWorkload `json:"Workload,omitempty"`
}

// ACLOIDCAuthURLRequest starts an OIDC login (POST /v1/acl/oidc/auth-url):
// RedirectURI must be one of the method's AllowedRedirectURIs; the
// ClientNonce, a secret of the caller's, must come back with the code.
type ACLOIDCAuthURLRequest struct {
	AuthMethodName string `json:"AuthMethodName"`
	RedirectURI    string `json:"RedirectURI"`
	ClientNonce    string `json:"ClientNonce"`
}

// ACLOIDCAuthURLResponse is the provider URL to send the user's browser to.
type ACLOIDCAuthURLResponse struct {
	AuthURL string `json:"AuthURL"`
}

// ACLOIDCCompleteAuthRequest ends an OIDC login (POST
// /v1/acl/oidc/complete-auth) with the code and state the provider sent to
// the redirect URI; the answer is an ACLToken.
type ACLOIDCCompleteAuthRequest struct {
	AuthMethodName string `json:"AuthMethodName"`
	ClientNonce    string `json:"ClientNonce"`
	State          string `json:"State"`
	Code           string `json:"Code"`
	RedirectURI    string `json:"RedirectURI"`
}

// ACLWorkload is the task a workload identity stands for.
type ACLWorkload struct {
	Namespace string `json:"Namespace"`
	JobID     string `json:"JobID"`
	Group     string `json:"Group"`
	Task      string `json:"Task"`
}
