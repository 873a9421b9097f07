package http

import (
	"context"
	"fmt"
	nethttp "net/http"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

// ServiceState is the optional native service read side of State.
type ServiceState interface {
	Services(ws memdb.WatchSet, namespace string) ([]*api.ServiceRegistration, error)
	ServicesByName(ws memdb.WatchSet, namespace, name string) ([]*api.ServiceRegistration, error)
	ServicesByAlloc(ws memdb.WatchSet, allocID string) ([]*api.ServiceRegistration, error)
}

// ServiceServer is the optional native service write side of Server.
type ServiceServer interface {
	UpdateNodeServices(ctx context.Context, nodeID, secret string, req *api.NodeServicesRequest) (uint64, error)
	DeleteServiceRegistration(ctx context.Context, namespace, name, id string) (uint64, error)
}

const tableServices = "service_registrations"

// serviceRoutes are Nomad's native service routes plus the client's write.
func (s *HTTPServer) serviceRoutes() {
	h := func(pattern string, f apiFunc) { s.mux.HandleFunc(pattern, s.wrap(f)) }
	h("GET /v1/services", s.serviceList)
	h("GET /v1/service/{name}", s.serviceGet)
	h("DELETE /v1/service/{name}/{id}", s.serviceDelete)
	h("GET /v1/allocation/{id}/services", s.allocServices)
	h("PUT /v1/node/{id}/services", s.nodeServicesUpdate)
	h("POST /v1/node/{id}/services", s.nodeServicesUpdate)
}

func (s *HTTPServer) serviceState() (ServiceState, error) {
	if s.cfg.State == nil {
		return nil, api.Errorf(api.ErrUnavailable, "this agent does not run the server role")
	}
	st, ok := s.cfg.State.(ServiceState)
	if !ok {
		return nil, api.Errorf(api.ErrUnavailable, "services are not available on this agent")
	}
	return st, nil
}

func (s *HTTPServer) serviceServer() (ServiceServer, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	ss, ok := s.cfg.Server.(ServiceServer)
	if !ok {
		return nil, api.Errorf(api.ErrUnavailable, "this server cannot change services")
	}
	return ss, nil
}

// queryNamespace is the namespace query parameter, Nomad's default when absent.
func queryNamespace(r *nethttp.Request) string {
	if ns := r.URL.Query().Get("namespace"); ns != "" {
		return ns
	}
	return api.DefaultNamespace
}

// serviceList groups the services by namespace: each service once, with
// the union of its instances' tags (as Nomad's GET /v1/services).
func (s *HTTPServer) serviceList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, err := s.serviceState()
	if err != nil {
		return nil, err
	}
	ns := queryNamespace(r)
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex(tableServices)
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

func (s *HTTPServer) serviceGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, err := s.serviceState()
	if err != nil {
		return nil, err
	}
	ns, name := queryNamespace(r), r.PathValue("name")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex(tableServices)
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

func (s *HTTPServer) serviceDelete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ss, err := s.serviceServer()
	if err != nil {
		return nil, err
	}
	idx, err := ss.DeleteServiceRegistration(r.Context(), queryNamespace(r), r.PathValue("name"), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	s.setMeta(w, idx)
	return nil, nil
}

// nodeServicesUpdate is the client's write of its allocs' registrations.
func (s *HTTPServer) nodeServicesUpdate(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ss, err := s.serviceServer()
	if err != nil {
		return nil, err
	}
	var req api.NodeServicesRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	idx, err := ss.UpdateNodeServices(r.Context(), id, r.Header.Get(api.NodeSecretHeader), &req)
	if err != nil {
		return nil, fmt.Errorf("update services of node %q: %w", id, err)
	}
	return api.NodeServicesResponse{Index: idx}, nil
}

// allocServices lists the registrations of one alloc (ID or prefix).
func (s *HTTPServer) allocServices(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, err := s.serviceState()
	if err != nil {
		return nil, err
	}
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		a, err := s.lookupAlloc(ws, r, r.PathValue("id"))
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
		return regs, s.maxIndex(tableServices, "allocs"), nil
	})
}
