package api

import (
	"encoding/json"
	"errors"
	"net/http"
)

// Error is the JSON error every REST endpoint returns:
//
//	{"error":{"code":"job_not_found","message":"job \"web\" not found"}}
//
// with the HTTP status in Status (not serialised). Clients branch on Code
// through errors.Is with the sentinels below, never on Message.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Status  int    `json:"-"`
	// body is the whole response an error was decoded from (a variable
	// write's conflict carries the current variable beside it).
	body []byte
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Message
}

// Is matches any *Error with the same Code, so errors.Is(err, ErrJobNotFound)
// works on errors decoded from a response.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// ErrorBody is the envelope on the wire.
type ErrorBody struct {
	Error *Error `json:"error"`
}

// WriteError renders e as the response: the JSON error body with e's
// status (500 when e has none). It is the one error writer of every
// drover HTTP handler (the agent's API, a client's routes, the UI).
func WriteError(w http.ResponseWriter, e *Error) {
	status := e.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(&ErrorBody{Error: e})
}

// NewError builds an error with a code, status and message.
func NewError(status int, code, msg string) *Error {
	return &Error{Code: code, Message: msg, Status: status}
}

// Sentinel errors; each carries its HTTP status. Wrap them with
// fmt.Errorf("...: %w", ErrX) and the HTTP layer renders code and status.
var (
	ErrBadRequest         = &Error{Code: "bad_request", Status: http.StatusBadRequest, Message: "bad request"}
	ErrInvalidJob         = &Error{Code: "invalid_job", Status: http.StatusBadRequest, Message: "invalid job"}
	ErrNotFound           = &Error{Code: "not_found", Status: http.StatusNotFound, Message: "not found"}
	ErrJobNotFound        = &Error{Code: "job_not_found", Status: http.StatusNotFound, Message: "job not found"}
	ErrNodeNotFound       = &Error{Code: "node_not_found", Status: http.StatusNotFound, Message: "node not found"}
	ErrAllocNotFound      = &Error{Code: "alloc_not_found", Status: http.StatusNotFound, Message: "allocation not found"}
	ErrEvalNotFound       = &Error{Code: "eval_not_found", Status: http.StatusNotFound, Message: "evaluation not found"}
	ErrDeploymentNotFound = &Error{Code: "deployment_not_found", Status: http.StatusNotFound, Message: "deployment not found"}
	ErrConflict           = &Error{Code: "conflict", Status: http.StatusConflict, Message: "conflict"}
	ErrIndexConflict      = &Error{Code: "index_conflict", Status: http.StatusConflict, Message: "enforce index mismatch"}
	ErrBodyTooLarge       = &Error{Code: "body_too_large", Status: http.StatusRequestEntityTooLarge, Message: "request body too large"}
	ErrMethodNotAllowed   = &Error{Code: "method_not_allowed", Status: http.StatusMethodNotAllowed, Message: "method not allowed"}
	ErrPermissionDenied   = &Error{Code: "permission_denied", Status: http.StatusForbidden, Message: "permission denied"}
	ErrNoLeader           = &Error{Code: "no_leader", Status: http.StatusServiceUnavailable, Message: "no cluster leader"}
	ErrNotLeader          = &Error{Code: "not_leader", Status: http.StatusServiceUnavailable, Message: "not the leader"}
	ErrUnavailable        = &Error{Code: "unavailable", Status: http.StatusServiceUnavailable, Message: "unavailable"}
	ErrTimeout            = &Error{Code: "timeout", Status: http.StatusGatewayTimeout, Message: "timeout"}
	ErrInternal           = &Error{Code: "internal", Status: http.StatusInternalServerError, Message: "internal error"}
	// ErrUnknownRegion: ?region= names a region no server of the
	// federation belongs to; ErrRegionUnavailable: the region is known
	// but none of its servers answered.
	ErrUnknownRegion     = &Error{Code: "unknown_region", Status: http.StatusBadRequest, Message: "unknown region"}
	ErrRegionUnavailable = &Error{Code: "region_unavailable", Status: http.StatusServiceUnavailable, Message: "region unavailable"}
)

var sentinels = []*Error{
	ErrBadRequest, ErrInvalidJob, ErrNotFound, ErrJobNotFound, ErrNodeNotFound, ErrAllocNotFound,
	ErrEvalNotFound, ErrDeploymentNotFound, ErrConflict, ErrIndexConflict, ErrBodyTooLarge,
	ErrMethodNotAllowed, ErrPermissionDenied, ErrNoLeader, ErrNotLeader, ErrUnavailable,
	ErrTimeout, ErrInternal, ErrUnknownRegion, ErrRegionUnavailable,
}

// Errorf returns an *Error with the sentinel's code and status and a
// specific message.
func Errorf(sentinel *Error, msg string) *Error {
	return &Error{Code: sentinel.Code, Status: sentinel.Status, Message: msg}
}

// AsError converts any error to an *Error for rendering: an *Error found
// with errors.As is returned as is (the outer message is kept if the error
// was wrapped); anything else is an internal error.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		if err.Error() != e.Error() {
			return &Error{Code: e.Code, Status: e.Status, Message: err.Error()}
		}
		if e.Status == 0 {
			return &Error{Code: e.Code, Status: statusFor(e.Code), Message: e.Message}
		}
		return e
	}
	return &Error{Code: ErrInternal.Code, Status: ErrInternal.Status, Message: err.Error()}
}

func statusFor(code string) int {
	for _, s := range sentinels {
		if s.Code == code {
			return s.Status
		}
	}
	return http.StatusInternalServerError
}
