package http

import (
	"context"
	"fmt"
	nethttp "net/http"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

// ServiceState is the native service read side of Store.
type ServiceState interface {
	Services(ws memdb.WatchSet, namespace string) ([]*api.ServiceRegistration, error)
	ServicesByName(ws memdb.WatchSet, namespace, name string) ([]*api.ServiceRegistration, error)
	ServicesByAlloc(ws memdb.WatchSet, allocID string) ([]*api.ServiceRegistration, error)
}

// ServicesBackend is the native service write side of the server role.
type ServicesBackend interface {
	UpdateNodeServices(ctx context.Context, nodeID, secret string, req *api.NodeServicesRequest) (uint64, error)
	DeleteServiceRegistration(ctx context.Context, namespace, name, id string) (uint64, error)
}

const tableServices = "service_registrations"

// serviceHandlers serve Nomad's native service routes plus the client's
// write.
type serviceHandlers struct {
	s *HTTPServer
	b ServicesBackend
}

func (h *serviceHandlers) ready() error {
	return h.s.need(h.b != nil, "this server cannot change services")
}

// queryNamespace is the namespace query parameter, Nomad's default when absent.
func queryNamespace(r *nethttp.Request) string {
	if ns := r.URL.Query().Get("namespace"); ns != "" {
		return ns
	}
	return api.DefaultNamespace
}

// list groups the services by namespace: each service once, with the
// union of its instances' tags (as Nomad's GET /v1/services).
func (h *serviceHandlers) list(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns := queryNamespace(r)
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, tableServices)
		regs, err := st.Services(ws, ns)
		if err != nil {
			return nil, 0, err
		}
		regs = visible(r, regs, func(s *api.ServiceRegistration) string { return s.Namespace }, acl.CapReadJob)
		return groupServices(regs), idx, nil
	})
}

// groupServices folds registrations (sorted by namespace and name) into
// Nomad's list shape.
func groupServices(regs []*api.ServiceRegistration) []*api.ServiceRegistrationListStubs {
	out := []*api.ServiceRegistrationListStubs{}
	var cur *api.ServiceRegistrationListStubs
	var stub *api.ServiceRegistrationListStub
	var tags map[string]bool
	for _, r := range regs {
		if cur == nil || cur.Namespace != r.Namespace {
			cur = &api.ServiceRegistrationListStubs{Namespace: r.Namespace, Services: []*api.ServiceRegistrationListStub{}}
			out = append(out, cur)
			stub = nil
		}
		if stub == nil || stub.ServiceName != r.ServiceName {
			stub = &api.ServiceRegistrationListStub{ServiceName: r.ServiceName, Tags: []string{}}
			cur.Services = append(cur.Services, stub)
			tags = map[string]bool{}
		}
		for _, t := range r.Tags {
			if !tags[t] {
				tags[t] = true
				stub.Tags = append(stub.Tags, t)
			}
		}
	}
	return out
}

func (h *serviceHandlers) get(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, name := queryNamespace(r), r.PathValue("name")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, tableServices)
		regs, err := st.ServicesByName(ws, ns, name)
		if err != nil {
			return nil, 0, err
		}
		if regs == nil {
			regs = []*api.ServiceRegistration{}
		}
		return regs, idx, nil
	})
}

func (h *serviceHandlers) delete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	idx, err := h.b.DeleteServiceRegistration(r.Context(), queryNamespace(r), r.PathValue("name"), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	h.s.setMeta(w, idx)
	return nil, nil
}

// updateNode is the client's write of its allocs' registrations.
func (h *serviceHandlers) updateNode(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var req api.NodeServicesRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	idx, err := h.b.UpdateNodeServices(r.Context(), id, r.Header.Get(api.NodeSecretHeader), &req)
	if err != nil {
		return nil, fmt.Errorf("update services of node %q: %w", id, err)
	}
	return api.NodeServicesResponse{Index: idx}, nil
}

// ofAlloc lists the registrations of one alloc (ID or prefix).
func (h *serviceHandlers) ofAlloc(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		a, err := lookupAlloc(st, ws, r, r.PathValue("id"))
		if err != nil {
			return nil, 0, err
		}
		regs, err := st.ServicesByAlloc(ws, a.ID)
		if err != nil {
			return nil, 0, err
		}
		if regs == nil {
			regs = []*api.ServiceRegistration{}
		}
		return regs, maxIndex(st, tableServices, "allocs"), nil
	})
}
